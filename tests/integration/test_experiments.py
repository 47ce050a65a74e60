"""Experiment files through the command line: every file in experiments/ runs (the README's example,
experiments/nic0-link-down.toml, loses about 1/6 during its fault); a file with [[expect]] clauses
(experiments/link-down-expect.toml) is `reproduced` or `not reproduced` from what it measured;
a malformed file exits 2 with one line naming the file, the line and the key, before anything is
created."""
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.emulation.net import netdevs
from testbed.emulation.run import runstate

from .conftest import run_until_valid

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "experiments").glob("*.toml"))
PLAIN = [p for p in FILES if "[[expect]]" not in p.read_text()]     # with clauses: tested below


def hpn_testbed(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "testbed", *args], check=False, capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


@pytest.mark.parametrize("path", PLAIN, ids=lambda p: p.name)
def test_every_experiment_file_runs(tmp_path, path):
    proc, (result,) = run_until_valid(str(path), "--out", str(tmp_path), timeout=600)
    assert result["verdict"] == "measured" and proc.returncode == 0, proc.stderr[-2000:]
    figures = result["figures"]
    assert figures["throughput"] and all(item["phases_mbps"]["before"]
                                         for item in figures["throughput"].values())
    names = [p[0] for p in figures["phases"]]
    assert names[0] == "before" and (names[-1] == "after") == bool(result["setup"]["faults"])
    assert Path(result["files"]["json"]).is_file() and Path(result["files"]["png"]).is_file()
    if path.stem == "nic0-link-down":      # the README's example: 1 of 6 ports lost
        host = figures["throughput"]["p0s0h0"]
        assert host["direction"] == "sent" and 0.6 / 6 <= host["loss"] <= 1.4 / 6, host
        assert host["phases_mbps"]["after"] >= 0.9 * host["phases_mbps"]["before"]


def test_expect_clauses_make_the_verdict_from_the_measurement(tmp_path):
    """Each clause carries the figure the run measured; the verdict is `reproduced` exactly when
    every one held. The UDP flow starts at 2 s; the probes measured RTT and a failover gap."""
    path = ROOT / "experiments" / "link-down-expect.toml"
    proc, (result,) = run_until_valid(str(path), "--out", str(tmp_path), timeout=600)
    clauses = result["figures"]["expect"]
    assert len(clauses) == 4 and all(isinstance(c["value"], (int, float)) for c in clauses), clauses
    assert result["verdict"] == ("reproduced" if all(c["held"] for c in clauses) else "not reproduced")
    assert proc.returncode == {"reproduced": 0, "invalid": 3}.get(result["verdict"], 1), proc.stderr[-2000:]
    udp = next(t for t in result["figures"]["traffic"] if t["protocol"] == "udp")
    assert udp["start"] == 2.0 and 1.0 <= udp["received_mbps"] <= 2.2, udp
    figures = result["figures"]
    assert figures["rtt"]["p1s0h0-n0 -> p1s0h1-n0"]["replies"] > 50
    assert figures["failover_gap"]["p0s0h0-n0 -> p0s0h1-n0"]["sent"] > 1000
    loss = next(c for c in clauses if c["expect"].startswith("loss"))
    assert loss["value"] == figures["throughput"]["p0s0h0"]["loss"]


@pytest.mark.parametrize("old,new,where", [
    ("nics = 3", "nics = -1", ":6: [fabric]: nics: nics=-1"),
    ('to = "p0s0h1"', 'to = "p0s0h9"', ":12: [[traffic]] 1: to: no host or NIC 'p0s0h9'"),
    ('port = "p0s0h0-n0p0"', 'port = "p0s0h0-n5p0"', ":18: [[fault]] 1: port: no port"),
    ("for = 3.0", "for = 3.0\nfor = 4.0", ":20: not valid TOML"),
])
def test_a_malformed_file_exits_2_naming_file_line_and_key(tmp_path, old, new, where):
    text = (ROOT / "experiments" / "nic0-link-down.toml").read_text()
    assert old in text
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace(old, new, 1))
    bridges, runs = netdevs.all_bridges(), [r.run_id for r in runstate.runs()]
    proc = hpn_testbed("run", str(bad), "--out", str(tmp_path / "out"), timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"hpn-testbed: {bad}{where}"), line
    assert netdevs.all_bridges() == bridges and [r.run_id for r in runstate.runs()] == runs
    assert not (tmp_path / "out").exists()


def test_set_does_not_apply_to_an_experiment_file(tmp_path):
    proc = hpn_testbed("run", str(FILES[0]), "--set", "nics=2", "--out", str(tmp_path), timeout=60)
    assert proc.returncode == 2 and "put its parameters in [fabric]" in proc.stderr
