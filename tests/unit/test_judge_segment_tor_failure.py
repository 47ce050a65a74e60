"""segment-tor-failure's judge on recorded figures: reproduced, not reproduced and invalid."""
import copy

import pytest

import scenarios
from testbed.scenario.base import INVALID, NOT_REPRODUCED, REPRODUCED


def run(during=25.5, stopped=(), repaired=27.1, baseline=27.2, busy=0.6, nic0_during=1.7,
        measured=(8.0, 12.5, 12.0), delivered=27.0, control=None, stalled=()):
    """One run's figures; the untouched NICs (`control`) by default all but NIC 0's share of
    the baseline, before, during and after (no drift)."""
    control = control or [baseline - 3.4] * 3
    return {"control_mbps": control, "capacity_mbps": 27.2, "baseline_mbps": baseline, "during_mbps": during,
            "repaired_mbps": repaired, "nic0_baseline_mbps": 3.4, "nic0_during_mbps": nic0_during,
            "ports": 2176, "ports_on_tor": 136, "nics": 1088, "stopped_nics": list(stopped) + list(stalled),
            "stopped_untouched": list(stalled),
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
    # measured here: 14 NICs of hosts 12-30 had a 5 s gap, 9 of them on rails the fault does not touch
    ("NICs off the ToR stopped too: the datapath stalled",
     figures(stopped=["p0s0h21-n0"], stalled=["p0s0h12-n2", "p0s0h16-n5"]), INVALID),
    ("not back after the repair", figures(repaired=25.5), NOT_REPRODUCED),
    ("single-ToR NIC 0 kept sending", figures(single=run(nic0_during=1.7)), NOT_REPRODUCED),
    ("the emulator dropped a third of the baseline", figures(baseline=18.0, during=16.9, repaired=18.0),
     INVALID),
    ("CPU saturated", figures(busy=0.97), INVALID),
    ("the datapath dropped what the hosts sent", figures(delivered=20.0), INVALID),
    ("the datapath paused through most of the fault", figures(measured=(8.0, 2.0, 12.0)), INVALID),
    # measured here: every port 9% under its baseline during the fault (the sender's stalls, a
    # packet a port per window), rail 0 at half the untouched NICs' rate
    ("the emulator's drift, seen on the untouched NICs too",
     figures(baseline=29.43, during=25.13, repaired=26.79, nic0_during=1.686, delivered=26.88,
             control=[25.72, 23.43, 23.3]), REPRODUCED),
    ("rail 0 kept its rate while the others drifted",
     figures(baseline=29.43, during=25.13, repaired=26.79, nic0_during=3.4, control=[25.72, 21.73, 23.3]),
     NOT_REPRODUCED),
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


def test_the_pause_ends_when_the_untouched_nics_deliver_again_on_average():
    """Delivered per sample swings by a third (the ports move in step): alternate samples under
    80% of the baseline still mean a running datapath."""
    from scenarios.claims.segment_tor_failure import resumed
    from testbed.emulation.net.counters import Sampler
    s = Sampler(["a"], interval=1.0)
    s.series = {"a": []}
    total = 0
    for t, mbps in enumerate([0, 0.1, 0, 30, 17, 31, 18, 30, 19]):
        total += int(mbps * 1e6 / 8)
        s.add(float(t), {"a": (total, 0)})
    assert resumed(s, ["a"], 25.0, 0.0, 9.0) == pytest.approx(2.0)
    assert resumed(s, ["a"], 40.0, 0.0, 9.0) == 9.0
