"""Scenario parameters and repeats through the command line: --set reaches the fabric and the
verdict, a parameter that would make the claim meaningless is refused (exit 2, one line, nothing
created), `run NAME --help` lists the knobs, --repeat reports every run and k of N."""
import json
import subprocess
import sys

import pytest

from testbed.emulation.net import netdevs
from testbed.emulation.run import runstate

from .conftest import run_until_valid, wait_for_headroom

pytestmark = pytest.mark.integration


def hpn_testbed(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "testbed", *args], check=False, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("bad,reason", [
    (["dual-tor-link-failure", "--set", "single_tor=true"], "runs dual-ToR and single-ToR HPN itself"),
    (["one-way-fault", "--set", "load=0.9"], "one port cannot carry"),
    (["node-limited-moe", "--set", "m=1,12"], "M <= hosts - 1"),
    (["dual-tor-link-failure", "--set", "nosuch=1"], "unknown parameter 'nosuch'"),
    (["dual-tor-link-failure", "--set", "nics=three"], "expected int"),
    (["link-flap", "--repeat", "0"], "--repeat 0"),
    (["hash-polarization", "--preset", "segment"], "no preset 'segment' for clos3"),
])
def test_a_refused_parameter_exits_2_in_one_line_before_anything_exists(tmp_path, bad, reason):
    bridges, runs = netdevs.all_bridges(), [r.run_id for r in runstate.runs()]
    proc = hpn_testbed("run", *bad, "--out", str(tmp_path / "out"), timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and reason in proc.stderr, proc.stderr
    assert netdevs.all_bridges() == bridges and [r.run_id for r in runstate.runs()] == runs
    assert not (tmp_path / "out").exists()


def test_run_name_help_lists_the_knobs_with_defaults():
    proc = hpn_testbed("run", "link-flap", "--help", timeout=60)
    assert proc.returncode == 0, proc.stderr
    for knob in ("flaps", "period", "down", "streams"):
        assert knob in proc.stdout
    assert "single_tor" in proc.stdout and "--repeat" in proc.stdout


def test_three_nics_expect_a_loss_of_one_sixth(tmp_path):
    proc, (result,) = run_until_valid("dual-tor-link-failure", "--quick", "--set", "nics=3",
                                      "--out", str(tmp_path), timeout=600)
    figures = result["figures"]
    assert figures["expected_loss_dual"] == round(1 / 6, 3) and figures["dual_tor"]["nics"] == 3
    assert "1/(2 x 3 NICs) = 16.7%" in result["expectation"]
    assert result["setup"]["knobs"]["streams"] == 4 and result["setup"]["settings"] == {"nics": "3"}
    assert result["verdict"] == "reproduced", result["measured"]
    assert 0.6 / 6 <= figures["dual_tor"]["loss"] <= 1.4 / 6
    assert proc.returncode == 0


def test_repeat_runs_fresh_bring_ups_and_reports_k_of_n(tmp_path):
    wait_for_headroom()
    proc = hpn_testbed("run", "one-way-fault", "--quick", "--repeat", "2", "--json", "--out", str(tmp_path))
    doc = json.loads(proc.stdout)
    assert doc["ok"], f"{doc.get('error')}\n{proc.stderr[-2000:]}"
    (summary,) = doc["result"]
    assert summary["runs"] == 2 and len(summary["results"]) == 2
    verdicts = [r["verdict"] for r in summary["results"]]
    assert summary["verdicts"] == verdicts and summary["reproduced"] == verdicts.count("reproduced")
    assert summary["summary"] == f"reproduced in {summary['reproduced']} of 2"
    runs = {r["setup"]["emulation"]["run"] for r in summary["results"]}
    assert len(runs) == 2, "each run has its own bring-up"
    detected = summary["figures"]["with_detector.detected_ms"]
    assert detected["runs"] == 2 and detected["min"] <= detected["median"] <= detected["max"]
    for k in (1, 2):
        assert (tmp_path / f"one-way-fault.run{k}.json").is_file()
        assert (tmp_path / f"one-way-fault.run{k}.png").is_file()
    assert (tmp_path / "one-way-fault.repeat.json").is_file()
    assert proc.returncode == (0 if summary["reproduced"] == 2 else 1)
