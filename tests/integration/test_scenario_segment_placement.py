"""segment-placement (C7) through the command line: the quick run reproduces (the inside job puts
no byte on tier 2, the spread one its ring's crossing bytes, and slows with the background), and
a non-default placement moves the bytes its ring predicts."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import run_until_valid, sets

pytestmark = pytest.mark.integration


def quick_run(tmp_path, *settings):
    """The scenario's quick run with --json, again (at most three times) while invalid: a run on a
    saturated CPU measured the emulator, not the fabric."""
    proc, (result,) = run_until_valid("segment-placement", "--quick", *sets(*settings), "--out",
                                      str(tmp_path),
                                      timeout=300)
    return proc, result


def tier2(result):
    quiet = result["figures"]["levels"][0]
    return quiet["inside"]["tier2_wire_bytes"], quiet["spread"]["tier2_bytes"]


def test_quick_run_reproduces(tmp_path):
    proc, result = quick_run(tmp_path)
    assert result["verdict"] == "reproduced", result["measured"] + json.dumps(result["figures"])[:2000]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert Path(result["files"]["json"]).is_file() and Path(result["files"]["png"]).is_file()
    inside, spread = tier2(result)
    assert max(inside) <= 2_000
    assert all(abs(x / result["figures"]["expected_tier2_bytes"]["spread"] - 1) < 0.05 for x in spread)


def test_a_three_host_job_crosses_tier_2_twice(tmp_path):
    # blocks of 2 and 1 hosts: the ring s0h0 -> s0h1 -> s1h0 -> s0h0 crosses twice, about 2/3 of
    # 400 kB in each of its two passes
    _, result = quick_run(tmp_path, "job_hosts=3", "size=400000", "loads=1.0")
    expected = result["figures"]["expected_tier2_bytes"]
    assert expected == {"inside": 0, "spread": 1_066_666}
    inside, spread = tier2(result)
    assert max(inside) <= 2_000 and all(abs(x / expected["spread"] - 1) < 0.05 for x in spread)
    assert result["verdict"] == "reproduced", result["measured"]


def test_a_hashed_upper_tier_is_refused_before_anything_is_built():
    proc = subprocess.run([sys.executable, "-m", "testbed", "run", "segment-placement", "--set",
                           "aggs_per_plane=2"], check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "by construction, not by a hash" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
