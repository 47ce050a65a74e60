"""A fault scenario interrupted with Ctrl-C in the middle of its fault leaves nothing behind: no run
state, process, bridge, interface (so no qdisc and no downed link) or nftables table."""
import json
import os
import signal
import subprocess
import sys

import pytest

from testbed.core import sh
from testbed.core.wait import wait_for
from testbed.emulation.control.controller import PROJECT
from testbed.emulation.net import netdevs
from testbed.emulation.run import runstate
from testbed.model import make_fabric

pytestmark = pytest.mark.integration
BUSY = "p0s0h0"


def new_run(proc) -> runstate.RunState | None:
    """The run the scenario process owns, once it has written its state."""
    for state in runstate.runs():
        if state.data["owner"][0] == proc.pid:
            return state
    return None


def link_is_down(intf: str) -> bool:
    try:
        return open(f"/sys/class/net/{intf}/operstate").read().strip() == "down"
    except OSError:
        return False


def host_has_nft_fault(state: runstate.RunState) -> bool:
    pid = state.data.get("hosts", {}).get(BUSY)
    if not pid:
        return False
    out = sh.run(["nsenter", "-t", str(pid), "-n", "nft", "list", "tables"], check=False)
    return "hpn_" in out


@pytest.mark.parametrize("scenario", ["link-flap", "one-way-fault"])
def test_ctrl_c_mid_fault_cleans_up(scenario, tmp_path):
    fab = make_fabric("hpn", {})
    port0 = fab.hosts[BUSY].nics[0].ports[0]
    link = fab.host_link(port0)
    proc = subprocess.Popen([sys.executable, "-m", "testbed", "run", scenario, "--out", str(tmp_path)],
                            cwd=PROJECT, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        state = wait_for("the scenario to write its run state", lambda: new_run(proc), 60)
        # the fabric is up and traffic runs once iperf3 processes are recorded; then the fault
        wait_for("the scenario's traffic", lambda: any(
            m == "iperf3" for _, m, _ in runstate.RunState.load(state.dir).data["pids"]), 60, 0.05)
        if scenario == "link-flap":
            wait_for("the first flap", lambda: link_is_down(link.b_intf), 60, 0.01)
        else:
            wait_for("the one-way fault", lambda: host_has_nft_fault(runstate.RunState.load(state.dir)), 60,
                     0.05)
        state = runstate.RunState.load(state.dir)    # everything it has started by now
        os.killpg(proc.pid, signal.SIGINT)            # what Ctrl-C in its terminal does
        out, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, out[-3000:]
    assert "interrupted; cleaned up" in out, out[-3000:]
    left = []
    if state.dir.exists():
        left.append(f"run state {state.dir}")
    left += [f"process {pid} ({marker})" for pid, marker in state.live_processes()]
    names = set(os.listdir("/sys/class/net"))
    left += [f"interface {i}" for i in state.data["root_intfs"] if i in names]
    left += [f"bridge {b}" for b in netdevs.tagged_bridges(state.run_id)]
    left += [f"bridge {b}" for b in set(fab.switches) & netdevs.all_bridges()]
    tables = sh.run(["nft", "list", "tables"], check=False)
    left += [f"nft table {t}" for t in tables.splitlines() if state.run_id.replace("-", "_") in t]
    qdiscs = json.loads(sh.run(["tc", "-j", "qdisc", "show"], check=False) or "[]")
    left += [f"qdisc on {q['dev']}" for q in qdiscs if q.get("dev") in state.data["root_intfs"]]
    assert not left, f"left behind after Ctrl-C in {scenario}: {left}"
