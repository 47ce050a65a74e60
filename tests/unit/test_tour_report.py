"""tests/vm/tour_report.py: the table `make tour-lane` prints, from recorded results."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SPEC = importlib.util.spec_from_file_location(
    "tour_report", Path(__file__).resolve().parents[1] / "vm" / "tour_report.py")
tour_report = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(tour_report)


def result(verdict: str, datapath: str, bond: str | None, settings: dict) -> dict:
    return {"claim": "C2", "verdict": verdict, "headline": "loss 25.0% | exp. 25.0%",
            "setup": {"dual": {"datapath": datapath, "bond": bond},
                      "single": {"datapath": datapath, "bond": None}, "settings": settings}}


def test_paths_taken_collects_every_bring_up():
    setup = {"fabrics": {"a": {"datapath": "system"}, "b": {"datapath": "system", "bond": "bonding"}}}
    assert tour_report.paths_taken(setup) == "system/bonding"
    assert tour_report.paths_taken({}) == "?"


def test_table_rows_and_exit_status(tmp_path, capsys):
    lane, user = tmp_path / "lane", tmp_path / "user"
    lane.mkdir()
    user.mkdir()
    (lane / "a.json").write_text(json.dumps(result("reproduced", "system", "bonding", {"scale": 0.02})))
    (lane / "a.time").write_text("97\n")
    (user / "a.json").write_text(json.dumps(result("reproduced", "netdev", "multipath", {})))
    (lane / "b.log").write_text("starting\nTestbedError: iperf3 gave no JSON\n")
    assert tour_report.main([str(lane), "a", "b", "--against", str(user)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[2] == ("| a | C2 | reproduced | loss 25.0% / exp. 25.0% | system/bonding (scale=0.02) | 97 s "
                      "| reproduced | loss 25.0% / exp. 25.0% | netdev/multipath |")
    assert out[3].startswith("| b | ? | no result | TestbedError: iperf3 gave no JSON |")
    assert out[-1] == "1 of 2 reproduced on the lane"
    assert tour_report.main([str(lane), "a"]) == 0
