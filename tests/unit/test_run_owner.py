"""Whether a run's owner is alive (testbed/emulation/run/runstate.py alive): the same process, not a
reused PID, and not a zombie. A run killed before its teardown whose parent has not reaped it
(a test harness holding a pexpect child, a supervisor that never waits) owns nothing any more:
`clean` must take what it left, not spare it as a live run."""
from __future__ import annotations

import subprocess
import sys

from testbed.core.wait import wait_for
from testbed.emulation.run import processes, runstate


def owned_by(pid: int, started: int | None) -> runstate.RunState:
    state = runstate.RunState("owner-test")     # in memory only: nothing is written
    state.data["owner"] = [pid, started]
    return state


def test_a_running_owner_is_alive_and_a_zombie_or_a_reused_pid_is_not():
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        started = processes.start_time(child.pid)
        assert runstate.alive(owned_by(child.pid, started))
        assert not runstate.alive(owned_by(child.pid, started + 1))      # another process on that PID
        child.stdin.close()                                            # it ends; not reaped yet
        wait_for("the child to become a zombie", lambda: processes.exited(child.pid), 30, 0.02)
        assert processes.start_time(child.pid) == started              # same PID and start time...
        assert not runstate.alive(owned_by(child.pid, started))        # ...but it runs no more
    finally:
        child.wait(timeout=30)
    assert not runstate.alive(owned_by(child.pid, started))               # reaped: gone
