"""Open vSwitch's two daemons, ovs-vswitchd and ovsdb-server, as a run depends on them.

Found by their pidfiles in Open vSwitch's run directory (only a pidfile root owns and no one
else may write, naming a process of that name), recorded at a run's start as PID and start
time, and watched by that identity, never by name: a daemon that died is a lost part of the run
even when its `--monitor` (or an operator) starts a new one at once, since the bridges' state in
that process went with it. The teardown asks `down` before it talks to Open vSwitch, so it never
waits on a dead daemon (testbed/emulation/run/teardown.py).
"""
from __future__ import annotations

from pathlib import Path

from testbed.emulation.run.processes import exited, start_time

DAEMONS = ("ovs-vswitchd", "ovsdb-server")


def daemons() -> dict[str, int]:
    """The daemons running now by name -> PID, from their pidfiles."""
    from testbed.emulation.net.system import ovs_rundir
    found = {}
    for name in DAEMONS:
        path = Path(ovs_rundir()) / f"{name}.pid"
        try:
            st = path.stat()
            pid = int(path.read_text()[:64].split()[0])
            if st.st_uid == 0 and not st.st_mode & 0o022 and not exited(pid) and \
                    Path(f"/proc/{pid}/comm").read_text().strip() == name:
                found[name] = pid
        except (OSError, ValueError, IndexError):
            continue
    return found


def record() -> dict[str, list]:
    """The daemons a run starts with: name -> [PID, start time] (for the run state and the watchdog)."""
    return {name: [pid, start_time(pid)] for name, pid in daemons().items()}


def lost(recorded: dict[str, list]) -> str | None:
    """The first of the `recorded` daemons that no longer runs (ended, or its PID now another
    process's), said as the run's end says it; None while all run."""
    for name, (pid, started) in recorded.items():
        if exited(pid) or start_time(pid) != started:
            return f"{name} died (PID {pid}): Open vSwitch lost the run's switches"
    return None


def down() -> list[str]:
    """The daemons not running now (their pidfile names no live process of theirs)."""
    running = daemons()
    return [name for name in DAEMONS if name not in running]
