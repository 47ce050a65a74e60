"""The run's processes first in line for the CPU, and every setting put back (testbed/core/
precedence.py chooses how: a cgroup of the run with a high weight, or nice values).

`apply(state)` is called once the run state exists: it makes the run's cgroup (recorded in the
state before it is made), then admits Open vSwitch's two daemons (ovs-vswitchd with all its
threads, ovsdb-server: PIDs from their root-owned pidfiles) and every process the run has
recorded so far, and sets `state.admit` so that each process the run records later (the
controller, the nodes' shells, the hosts' agents, iperf3, jobs' ranks) is admitted as it is
recorded. A process forked by an admitted one starts in its cgroup, with its nice value.

Before a thread is changed its old setting goes into the run state's `knobs`: the file that
takes it back to its cgroup (v1: that thread's `tasks`; v2: its process's `cgroup.procs`), or
its nice value with the one given. The teardown's last step, and `clean` for a run that died,
put back exactly what was recorded (`restore`): each recorded thread still in the run's
cgroup goes back where it was; a thread born in it goes where its process came from (a new
thread of ovs-vswitchd), or to the hierarchy's root (a child of a process the run started);
then the cgroup is removed. A nice value goes back only where it is still the one this run
gave. Nothing else on the machine is touched: no process the run neither started nor reads
from Open vSwitch's pidfiles, no cgroup the run did not make.
"""
from __future__ import annotations

import os
import time
from functools import partial
from pathlib import Path

from testbed.core import precedence
from testbed.core.precedence import Mechanism
from testbed.emulation.net.ovsdaemons import daemons
from testbed.emulation.run.processes import start_time

GROUP = "cpu-cgroup:"   # knobs entry: cpu-cgroup:DIR, the run's cgroup (recorded before mkdir)
MOVE = "cpu-move:"      # cpu-move:TID:START=FILE, the file that takes the thread back
NICE = "cpu-nice:"      # cpu-nice:TID:START:NEW=OLD


def threads(pid: int) -> list[int]:
    """The thread ids of `pid` now (none if it is gone)."""
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return []


def apply(state, mech: Mechanism | None = None) -> Mechanism:
    """Give the run's processes precedence for its length; the mechanism used (also said in
    the state's `about`, for reports). `mech`: this machine's choice unless given (tests)."""
    mech = mech or precedence.choose(is_root=os.geteuid() == 0)
    group = None
    if mech.cgroup:
        group = mech.hierarchy / f"{precedence.PREFIX}{state.run_id}"
        state.add("knobs", f"{GROUP}{group}")
        try:
            group.mkdir(mode=0o755)
            (group / mech.knob).write_text(str(mech.value))
        except OSError:           # a hierarchy that says rw but refuses: nice values instead
            mech, group = precedence.NICE_ONLY, None
    state.data["about"]["cpu_precedence"] = mech.describe()
    state.save()
    if mech.kind == "none":
        return mech
    state.admit = partial(admit, state, mech, group)
    state.admit([*daemons().values(), *(pid for pid, _ in state.live_processes())])
    return mech


def admit(state, mech: Mechanism, group: Path | None, pids) -> None:
    """Move each process of `pids` (all its threads) into `group`, or lower its threads' nice
    values: each thread's old setting recorded in `state` first."""
    for pid in pids:
        records = dict(r for tid in threads(pid) if (r := _record(mech, group, pid, tid)))
        if not records:
            continue
        state.add("knobs", *records.values())
        try:
            if group is not None:
                (group / "cgroup.procs").write_text(str(pid))    # the whole process, v1 and v2
            else:
                for tid in records:
                    os.setpriority(os.PRIO_PROCESS, tid, mech.value)   # Linux: that thread only
        except OSError:
            continue      # gone meanwhile: restore finds nothing to put back


def _record(mech: Mechanism, group: Path | None, pid: int, tid: int) -> tuple[int, str] | None:
    """(tid, what puts it back as it is now), or None: gone, already in the run's cgroup,
    already as high as the run would set it; v2: only the process's first thread (its threads
    move together)."""
    start = start_time(tid)
    try:
        if group is None:
            old = os.getpriority(os.PRIO_PROCESS, tid)
            return (tid, f"{NICE}{tid}:{start}:{mech.value}={old}") if old > mech.value else None
        if mech.kind == "cgroup2" and tid != pid:
            return None
        now = precedence.cgroup_of(Path(f"/proc/{pid}/task/{tid}/cgroup").read_text(), mech.kind)
    except OSError:
        return None
    if start is None or now is None:
        return None
    where = mech.hierarchy / now.lstrip("/")
    return None if where == group else (tid, f"{MOVE}{tid}:{start}={where / mech.move_file}")


def restore(recorded: list[str]) -> list[str]:
    """Put back what `recorded` (a run state's knobs) says this run changed; what was put back."""
    moves = _entries(recorded, MOVE)
    done = [_empty(Path(e[len(GROUP):]), moves) for e in recorded if e.startswith(GROUP)]
    nices = _entries(recorded, NICE)
    back = sum(_nice_back(tid, start, rest, nices) for tid, (start, rest) in nices.items())
    if back:
        done.append(f"CPU precedence: the nice value of {back} threads put back")
    return [d for d in done if d]


def _entries(recorded: list[str], prefix: str) -> dict[int, tuple[int, str]]:
    """tid -> (start time, the rest) of each well-formed entry with `prefix`."""
    out = {}
    for entry in recorded:
        if entry.startswith(prefix):
            tid, _, rest = entry[len(prefix):].partition(":")
            start, _, rest = rest.partition(":" if prefix == NICE else "=")
            if tid.isdigit() and start.isdigit():
                out[int(tid)] = (int(start), rest)
    return out


def _ours(group: Path) -> Path | None:
    """The hierarchy `group` is a run's cgroup of (its name and place), else None."""
    tops = precedence.hierarchies()
    return group.parent if group.name.startswith(precedence.PREFIX) and group.parent in tops else None


def _back_file(path: str) -> bool:
    """Is `path` a file that moves a thread, inside a cgroup hierarchy?"""
    p = Path(path)
    return p.name in ("tasks", "cgroup.procs") and ".." not in p.parts and \
        any(p.is_relative_to(top) for top in precedence.hierarchies())


def _empty(group: Path, moves: dict[int, tuple[int, str]]) -> str | None:
    """Every thread in the run's cgroup back where it came from; then the cgroup removed."""
    top = _ours(group)
    if top is None or not group.is_dir():
        return None
    v1 = (group / "tasks").exists()
    home = top / ("tasks" if v1 else "cgroup.procs")
    moved: set[int] = set()
    for _ in range(50):               # threads born meanwhile, a cgroup still busy: again
        for tid in _listed(group / ("tasks" if v1 else "cgroup.threads")):
            there = _destination(tid, moves)
            if (there is not None and _move(tid, there)) or _move(tid, home):
                moved.add(tid)
        try:
            group.rmdir()
            return f"CPU precedence: {len(moved)} threads back to their cgroups, {group} removed"
        except OSError:
            time.sleep(0.02)
    return f"CPU precedence: cgroup {group} not removed (still busy)"


def _destination(tid: int, moves: dict[int, tuple[int, str]]) -> Path | None:
    """Where `tid` goes back: its own record, else its process's (a thread born later)."""
    for who in (tid, _tgid(tid)):
        start, path = moves.get(who, (None, ""))
        if start is not None and start_time(who) == start and _back_file(path):
            return Path(path)
    return None


def _nice_back(tid: int, start: int, rest: str, nices: dict[int, tuple[int, str]]) -> int:
    """Put back the nice value of `tid` (and of its process's threads born since, when it is
    the process's first thread) where it is still the one this run gave; how many."""
    new, _, old = rest.partition("=")
    if start_time(tid) != start or not (_is_int(new) and _is_int(old)):
        return 0
    born = [t for t in threads(tid) if t not in nices] if _tgid(tid) == tid else []
    n = 0
    for t in [tid, *born]:
        try:
            if os.getpriority(os.PRIO_PROCESS, t) == int(new):
                os.setpriority(os.PRIO_PROCESS, t, int(old))
                n += 1
        except OSError:
            continue
    return n


def _is_int(s: str) -> bool:
    return s.lstrip("-").isdigit()


def _listed(path: Path) -> list[int]:
    try:
        return [int(x) for x in path.read_text().split()]
    except (OSError, ValueError):
        return []


def _move(tid: int, file: Path) -> bool:
    try:
        file.write_text(str(tid))
        return True
    except OSError:
        return False     # gone, or its old cgroup is: the caller tries the hierarchy's root


def _tgid(tid: int) -> int | None:
    try:
        for line in Path(f"/proc/{tid}/status").read_text().splitlines():
            if line.startswith("Tgid:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None
