"""The processes a run starts, identified so that a reused PID is never signalled: a PID with
its start time (/proc/PID/stat) and a word its command line must hold. The run state
(runstate.py) records them this way; every teardown ends them through here."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def start_time(pid: int) -> int | None:
    """When `pid` started (clock ticks since boot, /proc/PID/stat field 22): with the PID, an
    identity no later process can take over."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])   # the command name may hold spaces


def exited(pid: int) -> bool:
    """Has `pid` ended, though its parent has not reaped it yet (a zombie: state Z or X in
    /proc/PID/stat)? Such a process keeps its PID and start time but runs and holds nothing."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def owns(pid: int, marker: str, started: int | None = None) -> bool:
    """Is `pid` still the process we recorded: the same start time, `marker` in its command line?"""
    try:
        if marker.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return False
    except OSError:
        return False
    return started is None or start_time(pid) == started


def kill_pid(pid: int, marker: str, grace: float = 3.0, started: int | None = None) -> None:
    """End `pid` if it is still the process we started (its command line holds `marker`; and,
    when `started` is given, it started then)."""
    kill_all([(pid, marker, start_time(pid) if started is None else started)], grace)


def kill_all(procs: list[tuple[int, str, int | None]], grace: float = 3.0) -> list[int]:
    """End every (pid, marker, start time) that is still the process we recorded: SIGTERM to
    all, one grace period for all, then SIGKILL to those left (an interactive shell ignores
    SIGTERM). A stopped process (SIGSTOP) is continued after its SIGTERM, so it ends at once
    instead of after the grace period. Returns the PIDs it signalled."""
    ours = [p for p in procs if owns(*p)]
    for pid, _, _ in ours:
        _signal(pid, signal.SIGTERM)
        _signal(pid, signal.SIGCONT)
    deadline = time.monotonic() + grace
    left = ours
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = [p for p in left if owns(*p)]
    for pid, marker, started in left:
        if owns(pid, marker, started):
            _signal(pid, signal.SIGKILL)
    return [pid for pid, _, _ in ours]


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
