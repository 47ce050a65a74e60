"""fast-uplinks (C15): its judge fed draws built by hand (which uplink each of four flows hashed
onto), the fluid model's slowdowns for them, the opposite setting and a busy CPU. No fabric."""
import copy

import pytest

import scenarios
from scenarios.claims.fast_uplinks import predicted_slowdowns, removed
from testbed.core.errors import ParamError
from testbed.scenario.base import INVALID, NOT_REPRODUCED, REPRODUCED

PACE = 4.5          # Mbit/s: 0.9 of a 5 Mbit/s NIC
MBIT = 2.4          # a flow's 300 KB


def draw(uplinks: list[int], uplink_mbit: float, measured_over_model: float = 1.0, alone: float = 0.6):
    """Four flows, flow i over host port h<i>, uplink u<j> (j = uplinks[i]), downlink d<j>, to r<i>."""
    paths = [[f"h{i}", f"u{j}", f"d{j}", f"r{i}"] for i, j in enumerate(uplinks)]
    ports = {p: (uplink_mbit if p[0] in "ud" else 5.0) for path in paths for p in path}
    d = {"flow_paths": paths, "flow_bytes": [300_000] * 4, "port_mbit": ports, "cpu_busy": 0.6}
    d["flow_seconds"] = [round(s * alone * measured_over_model, 3) for s in predicted_slowdowns(d, PACE)]
    return d


def setting(draws, uplinks, uplink_mbit, over=1.0):
    return {"alone_s": 0.6, "pace_mbit": PACE, "uplinks": uplinks, "uplink_mbit": uplink_mbit,
            "draws": [draw(d, uplink_mbit, over) for d in draws]}


ONE_X = [[0, 0, 1, 2], [0, 1, 2, 3], [0, 0, 0, 1], [1, 1, 2, 2]]
TWO_X = [[0, 0, 1, 1], [0, 0, 0, 1], [0, 1, 1, 1], [0, 0, 1, 1]]


def figures(over_1x=1.08, over_2x=1.02):
    return {"1x": setting(ONE_X, 4, 5.0, over_1x), "2x": setting(TWO_X, 2, 10.0, over_2x),
            "setup": {}, "series": {}}


def judged(figs):
    return scenarios.get("fast-uplinks").judge(figs)


def test_the_fluid_model_of_a_draw_by_hand():
    # 1x, flows 0 and 1 on uplink 0: each at 2.5 of 4.5 (1.8x); flows 2, 3 alone at their pace
    assert predicted_slowdowns(draw([0, 0, 1, 2], 5.0), PACE) == pytest.approx([1.8, 1.8, 1, 1])
    # 2x: two flows on a 10 Mbit/s uplink keep their pace; three get 10/3 each (1.35x)
    assert predicted_slowdowns(draw([0, 0, 1, 1], 10.0), PACE) == pytest.approx([1, 1, 1, 1])
    assert predicted_slowdowns(draw([0, 0, 0, 1], 10.0), PACE) == pytest.approx([1.35, 1.35, 1.35, 1])


def test_fast_uplinks_that_remove_most_of_the_slowdown_reproduce():
    j = judged(figures())
    assert j.verdict == REPRODUCED
    assert j.derived["predicted_excess_removed"] >= 0.5 and j.derived["excess_removed"] >= 0.5


def test_the_opposite_setting_is_not_reproduced():
    f = figures()
    f["1x"], f["2x"] = f["2x"], f["1x"]
    assert judged(f).verdict == NOT_REPRODUCED


def test_2x_uplinks_that_collide_as_badly_as_1x_are_not_reproduced():
    f = figures()
    for d in f["2x"]["draws"]:       # measured as slow as at 1x: far from the 2x prediction
        d["flow_seconds"] = [s * 1.4 for s in d["flow_seconds"]]
    assert judged(f).verdict == NOT_REPRODUCED


@pytest.mark.parametrize("over", [1.25, 0.8])
def test_a_mean_far_from_its_prediction_is_not_reproduced(over):
    assert judged(figures(over_1x=over)).verdict == NOT_REPRODUCED


def test_a_busy_cpu_in_any_draw_makes_it_invalid():
    f = copy.deepcopy(figures())
    f["2x"]["draws"][3]["cpu_busy"] = 0.95
    assert judged(f).verdict == INVALID


def test_removed_is_the_share_of_the_excess():
    assert removed(1.8, 1.2) == pytest.approx(0.75)
    assert removed(1.0, 1.0) == 0.0 and removed(1.5, 1.6) < 0


@pytest.mark.parametrize("settings,word", [({"aggs": 3}, "even"), ({"hosts_per_edge": 1}, "collide"),
                                           ({"uplink_gbps": 200}, "uplink_gbps")])
def test_meaningless_parameters_are_refused(settings, word):
    with pytest.raises(ParamError, match=word):
        scenarios.get("fast-uplinks").configure(settings, quick=True)
