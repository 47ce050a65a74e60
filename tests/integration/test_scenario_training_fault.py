"""training-fault (C17) end to end through the command line: a real DDP training job over gloo
through a NIC-ToR link failure longer than its collective timeout; the quick run reproduces
(dual-ToR completes every step, single-ToR's job fails after the fault began, named by its rank
and last line), nothing is left behind, and a fault shorter than the timeout is refused before
anything is built."""
import json
import subprocess
import sys

import pytest

from testbed.emulation.net import netdevs
from testbed.emulation.run import runstate

from .conftest import run_until_valid

pytestmark = pytest.mark.integration


def test_quick_run_reproduces_and_leaves_nothing(tmp_path):
    proc, (result,) = run_until_valid("training-fault", "--quick", "--out", str(tmp_path))
    figures = result["figures"]
    assert result["verdict"] == "reproduced", result["measured"] + json.dumps(figures)[:3000]
    assert proc.returncode == 0, proc.stderr[-2000:]
    dual, single = figures["dual_tor"], figures["single_tor"]
    assert dual["job_ok"] and dual["done_all_ranks"] == dual["steps"] and dual["steps_during_fault"] > 0
    assert not single["job_ok"] and single["done"] < single["steps"]
    assert "job train: rank" in single["job"] and "exited" in single["job"], single["job"]
    logs = tmp_path / "training-fault.jobs"           # kept under --out, named in the job's line
    assert f"[logs: {logs / 'single-tor'}]" in single["job"], single["job"]
    assert all((logs / v / "rank1.out").is_file() for v in ("dual-tor", "single-tor"))
    assert figures["waiting"]["worst"], figures["waiting"]    # judged by the emulator's waiting
    assert result["series"]["dual-ToR"] and result["series"]["single-ToR"]
    assert not [s.run_id for s in runstate.runs() if s.data["owner"][0] == proc.pid]
    assert not {"p0s0h0", "p0s0r0t0"} & netdevs.all_bridges()


def test_a_fault_shorter_than_the_timeout_is_refused_before_anything_is_built():
    proc = subprocess.run([sys.executable, "-m", "testbed", "run", "training-fault", "--set", "fault=2",
                           "--set", "timeout=4"], check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "fault=2" in proc.stderr and "outlast" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
