"""Open vSwitch's snoop listeners held off while a fabric runs on the userspace datapath.

ovs-vswitchd listens on two Unix sockets per bridge, BRIDGE.mgmt (ovs-ofctl's way in: every
read the testbed makes) and BRIDGE.snoop (`ovs-ofctl snoop`: a copy of the bridge's conversation
with its controller), and tries an accept() on each in every iteration of its main loop (OVS's
ofproto/connmgr.c). On the userspace datapath that loop runs about once per frame-hop, and an
accept() on an idle listener still has the kernel allocate and free a socket file: the snoop's
is a cost per frame and per bridge of the fabric, paid for a feature the testbed never uses
(`bench/framecost.py` with `snoop=open` against `snoop=held`; docs/internals.md).

Before a bridge exists an empty directory is made at its BRIDGE.snoop path: OVS unlinks a stale
socket there before it binds, but not a directory, so the bind fails and OVS listens there on
nothing. It logs that failure, and tries again at each change of its database (one more log
line a bridge). Each directory is recorded in the run state before it is made, and removed by
the teardown's last step, or `clean`, once the bridges are gone; a path that already exists is
not ours and is left alone. The .mgmt listener stays. On the kernel datapath the loop does not
run per frame, and nothing is held.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from testbed.emulation import system

PREFIX = "ovs-snoop:"      # a run state's `knobs` entry: ovs-snoop:BRIDGE.snoop's path


def path(rundir: str, bridge: str) -> Path:
    return Path(rundir) / f"{bridge}.snoop"


def hold(state, rundir: str, bridges) -> int:
    """Hold the snoop path of each of `bridges` (not yet made) with an empty directory, each
    recorded in `state` first; how many were held."""
    held = 0
    for bridge in bridges:
        where = path(rundir, bridge)
        if os.path.lexists(where):
            continue
        state.add("knobs", f"{PREFIX}{where}")
        try:
            os.mkdir(where, 0o700)
            held += 1
        except OSError:
            continue
    return held


def release(recorded: list[str], rundir: str | None = None) -> list[str]:
    """Remove each recorded hold that is still an empty directory of ours in `rundir` (default:
    Open vSwitch's run directory)."""
    held = [Path(entry[len(PREFIX):]) for entry in recorded if entry.startswith(PREFIX)]
    if not held:
        return []
    rundir = Path(rundir or system.ovs_rundir())
    done = 0
    for where in held:
        if where.parent != rundir or not where.name.endswith(".snoop"):
            continue
        try:
            st = os.lstat(where)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
                os.rmdir(where)     # only if empty: whatever else is there stays
                done += 1
        except OSError:
            continue
    return [f"{done} snoop listener holds of Open vSwitch"] if done else []
