"""Experiment files through the command line: every file in experiments/ runs (the README's example,
experiments/nic0-link-down.toml, loses about 1/6 during its fault); a malformed file exits 2 with
one line naming the file, the line and the key, before anything is created."""
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.emulation import runstate

from .conftest import run_until_valid

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "experiments").glob("*.toml"))


def hpn_testbed(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "testbed", *args], check=False, capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_experiment_file_runs(tmp_path, path):
    proc, (result,) = run_until_valid(str(path), "--out", str(tmp_path), timeout=600)
    assert result["verdict"] == "measured" and proc.returncode == 0, proc.stderr[-2000:]
    figures = result["figures"]
    assert figures["throughput"] and all(item["phases_mbps"]["before"] for item in figures["throughput"].values())
    names = [p[0] for p in figures["phases"]]
    assert names[0] == "before" and (names[-1] == "after") == bool(result["setup"]["faults"])
    assert Path(result["files"]["json"]).is_file() and Path(result["files"]["png"]).is_file()
    if path.stem == "nic0-link-down":      # the README's example: 1 of 6 ports lost
        host = figures["throughput"]["p0s0h0"]
        assert host["direction"] == "sent" and 0.6 / 6 <= host["loss"] <= 1.4 / 6, host
        assert host["phases_mbps"]["after"] >= 0.9 * host["phases_mbps"]["before"]


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
    bridges, runs = runstate.all_bridges(), [r.run_id for r in runstate.runs()]
    proc = hpn_testbed("run", str(bad), "--out", str(tmp_path / "out"), timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"hpn-testbed: {bad}{where}"), line
    assert runstate.all_bridges() == bridges and [r.run_id for r in runstate.runs()] == runs
    assert not (tmp_path / "out").exists()


def test_set_does_not_apply_to_an_experiment_file(tmp_path):
    proc = hpn_testbed("run", str(FILES[0]), "--set", "nics=2", "--out", str(tmp_path), timeout=60)
    assert proc.returncode == 2 and "put its parameters in [fabric]" in proc.stderr
