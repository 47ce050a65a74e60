"""A dead Open vSwitch daemon mid-run (issue 39, item 1): `kill -9` of ovs-vswitchd, or of ovsdb-
server, while `run FILE.toml` sends traffic ends the run at once naming the daemon, exit 1, verdict
`invalid` (none from a broken fabric); the teardown goes on without Open vSwitch (it ends while the
daemon is still down) and leaves the bridges recorded; once the daemon is started again as
scripts/install.sh starts it, `clean` leaves nothing. Open vSwitch is put back after each test
whatever happens (other runs on this machine use it)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from testbed.core.wait import wait_for
from testbed.emulation.net import ovsdaemons, system
from testbed.model import make_fabric

from .conftest import TESTBED, Lines, run_of, state_leftovers

pytestmark = pytest.mark.integration

OVS_CTL = "/usr/share/openvswitch/scripts/ovs-ctl"
EXPERIMENT = """name = "ovs-dies"
[fabric]
family = "hpn"
[[traffic]]
kind = "iperf3"
from = "p0s0h0"
to = "p0s0h1"
seconds = 60
[measure]
throughput = ["p0s0h0"]
"""


def restore_ovs(log) -> None:
    """Start the daemons that are down as scripts/install.sh does (ovs-ctl start, detached: a
    session of its own, no descriptor of ours), and wait until Open vSwitch answers."""
    if ovsdaemons.down():
        with open(log, "ab") as out:
            subprocess.run([OVS_CTL, "start"], stdin=subprocess.DEVNULL, stdout=out,
                           stderr=subprocess.STDOUT, start_new_session=True, timeout=120)
    wait_for("Open vSwitch to answer", system.ovs_running, 60)


@pytest.fixture
def ovs_back(tmp_path):
    """Open vSwitch as it was after the test, however the test ends."""
    yield lambda: restore_ovs(tmp_path / "ovs-ctl.log")
    restore_ovs(tmp_path / "ovs-ctl.log")


def traffic_flows(pid: int):
    """The run of process `pid` once its iperf3 client runs (server and client recorded)."""
    state = run_of(pid)
    if state is None:
        return None
    iperfs = [p for p, marker in state.live_processes() if "iperf3" in marker]
    return state if len(iperfs) >= 2 else None


@pytest.mark.parametrize("daemon", ["ovs-vswitchd", "ovsdb-server"])
def test_a_killed_open_vswitch_daemon_ends_the_run_naming_it_and_clean_finishes(tmp_path, daemon,
                                                                               ovs_back):
    fab = make_fabric("hpn", {})
    (tmp_path / "ovs-dies.toml").write_text(EXPERIMENT)
    out_dir = tmp_path / "out"
    proc = subprocess.Popen([*TESTBED, "run", str(tmp_path / "ovs-dies.toml"), "--out", str(out_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = Lines(proc)
    try:
        state = wait_for("the run's traffic", lambda: traffic_flows(proc.pid), 300, 0.05)
        os.kill(ovsdaemons.daemons()[daemon], signal.SIGKILL)
        killed = time.monotonic()
        wait_for(f"the run to name {daemon}", lambda: lines.when(f"{daemon} died"), 30, 0.02)
        proc.wait(timeout=120)
        ended = time.monotonic()
        still_down = daemon in ovsdaemons.down()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = lines.text()
    print(f"{daemon} killed -> named in {lines.when(f'{daemon} died') - killed:.2f} s, "
          f"the run ended (teardown done) in {ended - killed:.2f} s")
    assert proc.returncode == 1, out
    assert "timed out" not in out, out
    [result] = [json.loads(p.read_text()) for p in out_dir.glob("*.json")]
    assert result["verdict"] == "invalid" and f"{daemon} died" in result["measured"], result
    assert still_down, "the daemon was back before the run ended: the test proves nothing"
    assert "bridges left recorded" in out, out
    assert state.dir.exists(), "the run state (its bridges) is gone before Open vSwitch is back"
    ovs_back()
    cleaned = subprocess.run([*TESTBED, "clean"], capture_output=True, text=True, timeout=120)
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    assert not state_leftovers(state, fab), cleaned.stdout
