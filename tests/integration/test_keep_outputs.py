"""`run FILE.toml --keep` keeps what the README promises in the run's directory: besides the
controller's files, each iperf3 client's JSON and the probes' logs (RTT and failover-gap pings)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import wait_for_headroom

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]

FILE = """
name = "kept"
[fabric]
family = "hpn"
nics = 2
[[traffic]]
kind = "iperf3"
from = "p0s0h0-n0"
to = "p0s0h1-n0"
seconds = 3
[measure]
rtt = [["p0s0h0-n0", "p0s0h1-n0"]]
failover_gap = [["p0s0h0-n0", "p0s0h1-n0"]]
"""


def test_a_kept_run_keeps_the_iperf3_output_and_the_probe_logs(tmp_path):
    (tmp_path / "kept.toml").write_text(FILE)
    wait_for_headroom(240)
    env = dict(os.environ, HPN_KEEP_DIR=str(tmp_path / "kept"))
    proc = subprocess.run([sys.executable, "-m", "testbed", "run", str(tmp_path / "kept.toml"), "--keep",
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=400,
                          cwd=ROOT, env=env)
    assert "run directory kept" in proc.stderr, proc.stderr[-2000:]
    runs = list((tmp_path / "kept").iterdir())      # one per attempt (a busy machine's is rerun)
    assert runs
    for run in runs:
        (client,) = run.glob("iperf3-*.json")
        assert json.loads(client.read_text())["end"]["sum_received"]["bytes"] > 0
        (rtt,) = run.glob("rtt-*.txt")
        (gaps,) = run.glob("probe-*.txt")
        assert "bytes from" in rtt.read_text() and "packets transmitted" in gaps.read_text()
        assert (run / "controller.log").is_file()
