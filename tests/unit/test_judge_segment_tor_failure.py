"""segment-tor-failure's judge on recorded figures: reproduced, not reproduced and invalid."""
import copy

import pytest

import scenarios
from scenarios.base import INVALID, NOT_REPRODUCED, REPRODUCED


def run(during=25.5, stopped=(), repaired=27.1, baseline=27.2, busy=0.6, nic0_during=1.7,
        measured=(8.0, 12.5, 12.0), delivered=27.0):
    return {"capacity_mbps": 27.2, "baseline_mbps": baseline, "during_mbps": during,
            "repaired_mbps": repaired, "nic0_baseline_mbps": 3.4, "nic0_during_mbps": nic0_during,
            "ports": 2176, "ports_on_tor": 136, "nics": 1088, "stopped_nics": list(stopped),
            "datagrams_sent": 60000, "datagrams_dropped": 3000, "cpu_busy": busy,
            "measured_s": list(measured), "datapath_pause_s": [6.5, 6.8],
            "delivered_mbps": [delivered, during, repaired]}


def figures(single=None, **dual):
    return {"dual_tor": run(**dual), "single_tor": single,
            "setup": {"warm_base_fault_after_s": [3, 6, 8, 6], "window_s": 3.0}, "series": {}}


CASES = [
    ("recorded", figures(), REPRODUCED),
    ("with single-ToR: NIC 0 stopped", figures(single=run(during=23.8, nic0_during=0.0)), REPRODUCED),
    ("lost 12.5%, twice the ToR's share", figures(during=23.8), NOT_REPRODUCED),
    ("a NIC stopped receiving", figures(stopped=["p0s0h7-n0"]), NOT_REPRODUCED),
    ("not back after the repair", figures(repaired=25.5), NOT_REPRODUCED),
    ("single-ToR NIC 0 kept sending", figures(single=run(nic0_during=1.7)), NOT_REPRODUCED),
    ("the emulator dropped a third of the baseline", figures(baseline=18.0, during=16.9, repaired=18.0), INVALID),
    ("CPU saturated", figures(busy=0.97), INVALID),
    ("the datapath dropped what the hosts sent", figures(delivered=20.0), INVALID),
    ("the datapath paused through most of the fault", figures(measured=(8.0, 2.0, 12.0)), INVALID),
]


@pytest.mark.parametrize("case,recorded,expected", CASES, ids=[c[0] for c in CASES])
def test_judge(case, recorded, expected):
    before = copy.deepcopy(recorded)
    judgement = scenarios.get("segment-tor-failure").judge(recorded)
    assert recorded == before
    assert judgement.verdict == expected, judgement.measured
    assert "15/16" in judgement.expectation or "93.75%" in judgement.expectation


def test_expected_loss_is_the_tors_share_of_the_host_ports():
    judgement = scenarios.get("segment-tor-failure").judge(figures())
    assert judgement.derived["expected_kept"] == 0.9375
    assert judgement.derived["loss"] == pytest.approx(1 - 25.5 / 27.2, abs=1e-3)


def test_a_fault_with_no_measurable_window_says_so_rather_than_zero():
    judged = scenarios.get("segment-tor-failure").judge(figures(during=0.0, measured=(8.0, -1.0, 9.9)))
    assert judged.verdict == INVALID
    assert "kept: not measured" in judged.measured and "kept 0.0%" not in judged.measured
    assert "not back at 80% for long enough" in judged.measured and "not measured" in judged.headline
