"""Removing what a run recorded (runstate.py), kind by kind: `destroy` for one run (the end of
every Emulation, and `clean`), `clean` for every run whose owner is gone and stray tagged bridges.

STEPS is the one list of kinds, in the order they must go: a cluster run's servers first
(while its hosts' shells still hold their namespaces), then processes, bridges, interfaces,
nftables tables, directories and the settings a run changed (rcu.py, sendbuf.py,
cpu_precedence.py). A step that fails does not stop the others.

No step waits on a dead Open vSwitch: the bridges' step asks first whether both daemons run
(ovsdaemons.down, from their pidfiles) and, if one does not, leaves the bridges recorded and says
so (the run state stays, and `clean` removes them once Open vSwitch is back); every ovs-vsctl is
bounded (--timeout, and a subprocess timeout above it). Interfaces, nftables tables, directories
and settings go without Open vSwitch.
"""
from __future__ import annotations

import os
import shutil
import subprocess

from testbed.core import sh
from testbed.core.errors import TestbedError
from testbed.emulation import cpu_precedence
from testbed.emulation.net import netdevs, ovsdaemons, rcu, sendbuf
from testbed.emulation.run.processes import kill_all
from testbed.emulation.run.runstate import RunState, alive, held_run, runs


def _servers(state: RunState) -> list[str]:
    """The cluster room's own step (a run across servers: what they hold), loaded only here."""
    from testbed.emulation.cluster import parts
    return parts.teardown_step(state)


def _processes(state: RunState) -> list[str]:
    return [f"process {pid}" for pid in kill_all([tuple(p) for p in reversed(state.data["pids"])])]


def _bridges(state: RunState) -> list[str]:
    down = ovsdaemons.down()
    if down and state.data["bridges"]:
        raise TestbedError(f"{' and '.join(down)} not running: {len(state.data['bridges'])} bridges left "
                           "recorded, for `hpn-testbed clean` once Open vSwitch is back")
    ours = netdevs.tagged_bridges(state.run_id) | (set(state.data["bridges"]) & netdevs.all_bridges())
    return [netdevs.delete_bridges(ours, len(state.data["root_intfs"]))]


def _interfaces(state: RunState) -> list[str]:
    n = netdevs.delete_links(state.data["root_intfs"])
    return [f"{n} interfaces"] if n else []


def _nft_tables(state: RunState) -> list[str]:
    return [f"nft table {table}" for table in state.listed("nft_tables")
            if sh.ok(["nft", "delete", "table", *table.split()])]


def _dirs(state: RunState) -> list[str]:
    done = []
    for path in state.data.get("dirs", []):
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
            done.append(f"directory {path}")
    return done


def _knobs(state: RunState) -> list[str]:
    recorded = state.data.get("knobs", [])
    return rcu.restore(recorded) + sendbuf.restore(recorded) + cpu_precedence.restore(recorded)


STEPS = (("servers", _servers), ("processes", _processes), ("bridges", _bridges),
         ("interfaces", _interfaces), ("nft tables", _nft_tables), ("directories", _dirs),
         ("kernel settings", _knobs))


def destroy(state: RunState) -> list[str]:
    """Remove everything `state` lists. Returns what was removed, for the user. A step that
    fails does not stop the others; the run state then stays, for `clean` to try again, and
    TestbedError says what is left."""
    done, failed = [], []
    for kind, step in STEPS:
        try:
            done += [d for d in step(state) if d]
        except (TestbedError, OSError, subprocess.TimeoutExpired) as e:
            failed.append(f"{kind}: {str(e).splitlines()[0]}")
    if failed:
        raise TestbedError(f"teardown of {state.run_id} incomplete ({'; '.join(failed)}): "
                           "run `hpn-testbed clean`")
    shutil.rmtree(state.dir, ignore_errors=True)
    return done


def clean(include_live: bool = False) -> list[str]:
    """Destroy every run whose owner is gone (or all runs), then any stray tagged bridge: one
    that no recorded run lists and that is not tagged with the run holding the machine's lock
    (a live fabric recorded under another HPN_RUN_DIR)."""
    done: list[str] = []
    for state in runs(done):
        if include_live or not alive(state):
            try:
                done += [f"{state.run_id}: {d}" for d in destroy(state) or ["(nothing left)"]]
            except TestbedError as e:   # say so, and go on with the other runs
                done.append(f"{state.run_id}: {e}")
    live_bridges = {b for s in runs() for b in s.data["bridges"]}
    held = held_run()
    stray = netdevs.tagged_bridges() - live_bridges - (netdevs.tagged_bridges(held) if held else set())
    if stray:
        netdevs.delete_bridges(stray, 0)
        done.append(f"stray tagged bridges: {', '.join(sorted(stray))}")
    return done
