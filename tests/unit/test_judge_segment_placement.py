"""segment-placement (C7): its judge fed recorded figures, its expectation and its placements; no
fabric, no root."""
import copy

import pytest

import scenarios
from scenarios.claims import segment_placement as sp
from testbed.core.errors import ParamError
from testbed.scenario.base import INVALID, NOT_REPRODUCED, REPRODUCED
from testbed.workload import collectives as C

from .conftest import put


def placement(completion, busy, tier2=None, wire=None):
    return {"completion_s": completion, "tier2_bytes": tier2 or [None] * len(completion),
            "tier2_wire_bytes": wire or [0] * len(completion), "bg_mbit": [0.0] * len(completion),
            "cpu_busy": busy}


def recorded():
    """A quick run here (loads none, 75%, 100%; three runs of each placement), trimmed."""
    def level(load, ready, inside, spread):
        return {"load": load, "inside": inside, "spread": spread, "bg_ready_mbit": ready,
                "bg_ran_throughout": True}
    return {"levels": [
        level(0.0, 0.0, placement([1.161, 1.179, 1.126], [0.7, 0.464, 0.436], [264, 16, 0], [1254, 280, 0]),
              placement([1.108, 1.125, 1.156], [0.508, 0.531, 0.526], [1500112, 1500064, 1500064],
                        [1607890, 1607446, 1607644])),
        level(0.75, 35.5, placement([1.134, 1.116, 1.123], [0.729, 0.715, 0.708]),
              placement([1.511, 1.628, 1.568], [0.691, 0.683, 0.697])),
        level(1.0, 41.6, placement([1.121, 1.13, 1.129], [0.752, 0.757, 0.755]),
              placement([2.898, 3.024, 3.153], [0.668, 0.661, 0.651]))],
        "rates": {"port_mbit": 6.0, "uplink_mbit": 12.0}, "ranks": 4,
        "expected_tier2_bytes": {"inside": 0, "spread": 1500000},
        "setup": {"knobs": {"size": 500_000, "job_hosts": 4, "width": 2, "loads": [0.75, 1.0],
                            "bg_hosts": 2, "streams": 2, "repetitions": 3}},
        "series": {}}


def spread_like_inside(figures):
    for row in figures["levels"]:
        row["spread"]["completion_s"] = [x * 1.02 for x in row["inside"]["completion_s"]]


def inside_slowed_by_load(figures):
    figures["levels"][2]["inside"]["completion_s"] = [1.6, 1.7, 1.65]


def cpu_saturated(figures):
    figures["levels"][2]["spread"]["cpu_busy"] = [0.93, 0.97, 0.8]


CASES = [
    ("recorded", [], REPRODUCED),
    ("the inside job crossed tier 2",
     [put("levels.0.inside.tier2_wire_bytes", [1_200_000, 1_200_100, 1_200_000])],
     NOT_REPRODUCED),
    ("spread moved fewer bytes than its ring",
     [put("levels.0.spread.tier2_bytes", [1_200_000, 1_200_000, 1_200_000])],
     NOT_REPRODUCED),
    ("the spread ring no slower under load", [spread_like_inside], NOT_REPRODUCED),
    ("the slowdown shrank with the load", [put("levels.2.spread.completion_s", [1.3, 1.35, 1.32])],
     NOT_REPRODUCED),
    ("inside slowed by the upper tier's load", [inside_slowed_by_load], NOT_REPRODUCED),
    ("75% load slowed it less than a quarter of the expected excess",
     [put("levels.1.spread.completion_s", [1.25, 1.3, 1.29])], NOT_REPRODUCED),
    ("CPU saturated", [cpu_saturated], INVALID),
    ("background ended before the job", [put("levels.1.bg_ran_throughout", False)], INVALID),
]


@pytest.mark.parametrize("case,changes,expected", CASES, ids=[c[0] for c in CASES])
def test_judge(case, changes, expected):
    figures = recorded()
    for change in changes:
        change(figures)
    before = copy.deepcopy(figures)
    judgement = scenarios.get("segment-placement").judge(figures)
    assert figures == before, "a judge must not change the figures it is given"
    assert judgement.verdict == expected, judgement.measured
    assert judgement.expectation and judgement.measured and judgement.headline


def test_prose_quotes_the_figures():
    judgement = scenarios.get("segment-placement").judge(recorded())
    assert "inside 16 B (1254 B on the wire), spread 1.500 MB (expected 1.500 MB)" in judgement.measured
    assert "100%: 2.68x (exp. 2.25x)" in judgement.measured
    assert "75% load 1.80x" in judgement.expectation
    assert [r["slowdown"] for r in judgement.derived["slowdowns"]] == [0.969, 1.396, 2.678]


# ---- the expectation ----

def test_water_fill_gives_small_flows_their_demand_and_splits_the_rest():
    assert sp.water_fill(20, [9, 3.75, 3.75, 3.75, 3.75]) == [5.0, 3.75, 3.75, 3.75, 3.75]
    assert sp.water_fill(20, [9, 5, 5, 5, 5]) == [4.0] * 5
    assert sp.water_fill(20, [9]) == [9]


@pytest.mark.parametrize("load,slowdown", [(0, 1.0), (0.5, 1.0), (0.75, 1.8), (1.0, 2.25)])
def test_expected_slowdown_at_the_defaults(load, slowdown):
    # a crossing hop paced at 9 of its port's 10 Mbit/s on a 20 Mbit/s uplink with 4 background streams
    assert sp.expected_slowdown(load, 10, 20, 4) == pytest.approx(slowdown)


def test_expected_slowdown_grows_with_the_load_and_the_streams():
    at = [sp.expected_slowdown(x / 20, 10, 20, 4) for x in range(21)]
    assert at == sorted(at)
    assert sp.expected_slowdown(1.0, 10, 20, 8) > sp.expected_slowdown(1.0, 10, 20, 4)


# ---- the placements, on the model ----

def configured(**settings):
    return scenarios.get("segment-placement").configure(settings, quick=True)


def test_placements_and_their_tier2_bytes():
    s = configured(job_hosts=5, width=3)
    hosts, fab = s.hosts(), s.fabric()
    assert hosts["inside"] == ["p0s0h0", "p0s0h1", "p0s0h2", "p0s0h3", "p0s0h4"]
    assert hosts["spread"] == ["p0s0h0", "p0s0h1", "p0s1h0", "p0s1h1", "p0s2h0"]
    assert ("p0s2h5", "p0s0h5") in hosts["background"] and len(hosts["background"]) == 6
    assert (fab.params.segments, fab.params.hosts, fab.params.aggs_per_plane) == (3, 7, 1)
    inside = C.ring_allreduce(fab, hosts["inside"], 1_000_000)
    spread = C.ring_allreduce(fab, hosts["spread"], 1_000_000)
    assert sp.crossing_bytes(inside) == 0
    # the ring crosses tier 2 three times (s0->s1, s1->s2, s2->s0), each hop 2 x 4/5 of the size
    assert sp.crossing_bytes(spread) == 3 * 2 * 800_000


def test_rails_follow_the_nics():
    s = configured(nics=2, rails=2)
    spread = C.ring_allreduce(s.fabric(), s.hosts()["spread"], 1_000_000)
    assert sp.crossing_bytes(spread) == 2 * 2 * 2 * 750_000


@pytest.mark.parametrize("settings,match", [
    ({"nics": 2, "rails": 1}, "rail-optimized"),
    ({"bg_hosts": 1}, "needs bg_hosts >= 2"),
    ({"uplink_gbps": 800}, "needs bg_hosts >= 4"),
    ({"segments": 3}, "set width=W"),
    ({"aggs_per_plane": 2}, "by construction"),
    ({"job_hosts": 2, "width": 3}, "one host in each"),
])
def test_meaningless_parameters_are_refused(settings, match):
    with pytest.raises(ParamError, match=match):
        configured(**settings)
