"""Open vSwitch's daemons as a run depends on them (testbed/emulation/net/ovsdaemons.py): found
by their pidfiles, watched by PID and start time; a dead one is named by the watchdog, and the
teardown leaves the bridges recorded instead of waiting on it."""
from __future__ import annotations

import os
import shutil
import subprocess
from types import SimpleNamespace

import pytest

from testbed.core import errors, interrupts
from testbed.core.errors import PartLost
from testbed.core.wait import wait_for
from testbed.emulation.control.watchdog import Watchdog
from testbed.emulation.net import ovsdaemons, system
from testbed.emulation.nodes import switch_class
from testbed.emulation.run import teardown
from testbed.emulation.run.processes import start_time


@pytest.fixture
def daemon(tmp_path):
    """A process named ovs-vswitchd (a copy of sleep), killed after the test."""
    exe = tmp_path / "ovs-vswitchd"
    shutil.copy(shutil.which("sleep"), exe)
    proc = subprocess.Popen([str(exe), "600"])
    wait_for("the fake daemon to run", lambda: start_time(proc.pid) is not None, 10)
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def rundir(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    monkeypatch.setattr(system, "ovs_rundir", lambda: str(run))
    return run


def test_a_daemon_that_runs_is_not_lost(daemon):
    assert ovsdaemons.lost({"ovs-vswitchd": [daemon.pid, start_time(daemon.pid)]}) is None


def test_a_killed_daemon_is_named(daemon):
    recorded = {"ovs-vswitchd": [daemon.pid, start_time(daemon.pid)]}
    daemon.kill()
    daemon.wait()
    assert ovsdaemons.lost(recorded).startswith(f"ovs-vswitchd died (PID {daemon.pid})")


def test_a_killed_daemon_not_yet_reaped_is_named(daemon):
    recorded = {"ovsdb-server": [daemon.pid, start_time(daemon.pid)]}
    daemon.kill()
    wait_for("the daemon to end", lambda: ovsdaemons.lost(recorded) is not None, 10)
    assert ovsdaemons.lost(recorded).startswith("ovsdb-server died")


def test_another_process_on_the_recorded_pid_is_a_loss(daemon):
    """A daemon restarted on the same PID (or a PID reused) is not the one the run started on."""
    assert ovsdaemons.lost({"ovs-vswitchd": [daemon.pid, start_time(daemon.pid) - 1]})


def test_daemons_come_from_root_owned_pidfiles_naming_their_process(daemon, rundir):
    (rundir / "ovs-vswitchd.pid").write_text(f"{daemon.pid}\n")
    (rundir / "ovsdb-server.pid").write_text(f"{daemon.pid}\n")      # not a process of that name
    assert ovsdaemons.daemons() == {"ovs-vswitchd": daemon.pid}
    assert ovsdaemons.record() == {"ovs-vswitchd": [daemon.pid, start_time(daemon.pid)]}
    assert ovsdaemons.down() == ["ovsdb-server"]
    os.chmod(rundir / "ovs-vswitchd.pid", 0o666)                    # others may write it
    assert ovsdaemons.daemons() == {}


def test_a_dead_daemons_pidfile_names_it_down(daemon, rundir):
    (rundir / "ovs-vswitchd.pid").write_text(f"{daemon.pid}\n")
    daemon.kill()
    daemon.wait()
    assert "ovs-vswitchd" in ovsdaemons.down()


def test_the_watchdog_names_a_dead_daemon(daemon):
    dog = Watchdog(controller=None, bridges=["s1"], target="unix:/x",
                   daemons={"ovs-vswitchd": [daemon.pid, start_time(daemon.pid)]}).start()
    try:
        daemon.kill()
        try:        # the watchdog stops the main thread with PartLost, as it stops a run
            wait_for("the watchdog to notice", lambda: dog.lost is not None, 10)
        except PartLost:
            pass
    finally:
        dog.stop()
        interrupts.last = None
    assert dog.lost.startswith("ovs-vswitchd died")


def state_of(tmp_path, bridges):
    d = tmp_path / "state"
    d.mkdir()
    return SimpleNamespace(run_id="hpnx", dir=d, data={"bridges": bridges, "root_intfs": []})


def test_bridges_of_a_dead_open_vswitch_stay_recorded_for_clean(tmp_path, monkeypatch):
    monkeypatch.setattr(ovsdaemons, "down", lambda: ["ovs-vswitchd"])
    state = state_of(tmp_path, ["s1", "s2"])
    monkeypatch.setattr(teardown, "STEPS", (("bridges", teardown._bridges),))
    with pytest.raises(errors.TestbedError, match="ovs-vswitchd not running: 2 bridges left recorded"):
        teardown.destroy(state)
    assert state.dir.exists()     # `clean` tries again


def test_a_step_that_times_out_leaves_the_state_and_the_others_go_on(tmp_path, monkeypatch):
    def hangs(state):
        raise subprocess.TimeoutExpired("ovs-vsctl", 15)
    state = state_of(tmp_path, [])
    monkeypatch.setattr(teardown, "STEPS", (("bridges", hangs), ("directories", lambda s: ["d"])))
    with pytest.raises(errors.TestbedError, match="incomplete .bridges: Command 'ovs-vsctl' timed out"):
        teardown.destroy(state)
    assert state.dir.exists()


def test_mininet_shutdown_leaves_the_bridges_to_the_teardown():
    ended = []
    switch = SimpleNamespace(terminate=lambda: ended.append("s1"))
    assert switch_class("hpnx", "unix:/x").batchShutdown([switch]) == [switch]
    assert ended == ["s1"]
