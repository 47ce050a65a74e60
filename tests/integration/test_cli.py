"""The command line end to end: `up --check`, bad input, cleanup."""
import subprocess
import sys

import pytest

from testbed.emulation.net import netdevs
from testbed.emulation.run import runstate

pytestmark = pytest.mark.integration


def test_up_check_cli_passes_and_leaves_nothing(tmp_path):
    before = netdevs.all_bridges()
    runs_before = [r.run_id for r in runstate.runs()]
    proc = subprocess.run([sys.executable, "-m", "testbed", "up", "clos3", "--check", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"passed": true' in proc.stdout and '"passed": false' not in proc.stdout
    assert netdevs.all_bridges() == before
    assert [r.run_id for r in runstate.runs()] == runs_before


def test_bad_parameters_exit_2_and_create_nothing():
    before = netdevs.all_bridges()
    runs_before = [r.run_id for r in runstate.runs()]
    for bad in (["--set", "tors=3"], ["--set", "rails=3"], ["--set", "hosts=0"],
                ["--set", "radix=3"], ["--set", "nosuch=1"]):
        proc = subprocess.run([sys.executable, "-m", "testbed", "up", "hpn", "--check", *bad],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, (bad, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert netdevs.all_bridges() == before
    assert [r.run_id for r in runstate.runs()] == runs_before


@pytest.mark.parametrize("proto", ["tcp", "udp"])
def test_trace_follows_a_5_tuple_on_a_running_fabric(proto):
    import json
    import signal
    proc = subprocess.Popen([sys.executable, "-m", "testbed", "up", "clos3"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        for line in proc.stdout:
            if "press Ctrl-C" in line:
                break
        [state] = [s for s in runstate.runs() if s.data["owner"][0] == proc.pid]
        out = subprocess.run([sys.executable, "-m", "testbed", "trace", "--fabric", state.run_id,
                              "p0e0h0", "p1e1h1", "--proto", proto, "--sport", "40123", "--json"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        hops = json.loads(out.stdout)["result"]["hops"]
        assert len(hops) == 5 and all(h["out_port"] for h in hops)     # edge, agg, core, agg, edge
        bad = subprocess.run([sys.executable, "-m", "testbed", "trace", "--fabric", state.run_id,
                              "p0e0h0", "p1e1h1", "--sport", "70000"], capture_output=True, text=True)
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 130


def test_ctrl_c_the_moment_up_says_it_is_up_tears_down():
    """SIGINT sent as soon as the prompt line is read (a script or test that fails at once) used
    to land just before signal.pause() and leave `up` waiting for ever, its fabric up."""
    import signal
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-m", "testbed", "up", "clos3"], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            if "press Ctrl-C" in line:
                proc.send_signal(signal.SIGINT)
                break
        proc.communicate(timeout=60)
        assert proc.returncode == 130
