"""roce-entropy (C14): its judge fed figures of the shape a run records, the opposite setting (more
QPs that change nothing) among them; its ring, its paths and prediction, its parameters. No
fabric, no root."""
import copy
import random

import pytest

import scenarios
from scenarios.claims import roce_entropy as R
from scenarios.claims.roce_entropy import pinning as PN
from scenarios.claims.roce_entropy import ring
from testbed.core.errors import ParamError
from testbed.scenario.base import INVALID, NOT_REPRODUCED, REPRODUCED

from .conftest import put

IDEAL = 7.778


SPREAD = 13.3333      # the pinning part's prediction (4 hosts of 2 leaves, 2 spines)
PINNED_PATHS = [["g0h0-n0p0", "pl0l0-eth5", "pl0s0-eth2", "pl0l1-eth1"],
                ["g1h0-n0p0", "pl0l1-eth5", "pl0s0-eth1", "pl0l0-eth3"],
                ["g0h2-n0p0", "pl0l0-eth5", "pl0s0-eth2", "pl0l1-eth3"],
                ["g1h2-n0p0", "pl0l1-eth5", "pl0s0-eth1", "pl0l0-eth1"]]


def draw(over, busiest, least, spread, cpu=0.5, sent=0.99, traced=None, ideal=IDEAL, paths=()):
    """One round as a run records it (two leaves of four uplinks; figures trimmed)."""
    high, low = (0.25 + spread / 2, 0.25 - spread / 2)
    util = {"pl0l0-eth5": busiest, "pl0l0-eth6": least, "pl0l1-eth5": busiest, "pl0l1-eth6": least}
    return {"sports": [49152], "uplink_util": util, "uplink_expected": dict(util),
            "uplink_share": {"pl0l0": [high, 0.25, 0.25, low], "pl0l1": [high, 0.25, 0.25, low]},
            "completion_s": round(over * ideal, 4), "traced_s": round((traced or over) * ideal, 4),
            "paths": [list(p) for p in paths],
            "qp_delivered_mbit": [0.5, 1.0], "sent_fraction": sent, "cpu_busy": cpu}


def recorded():
    """A quick run's shape: one QP about 2x the prediction, uplinks full and idle; 8 QPs 1.3x."""
    rows = {"1": [draw(1.8, 1.0, 0.0, 0.5), draw(2.7, 1.0, 0.0, 0.75), draw(1.8, 1.0, 0.0, 0.5),
                  draw(1.8, 1.0, 0.0, 0.5)],
            "2": [draw(1.8, 1.0, 0.22, 0.4)] * 4,
            "4": [draw(1.57, 1.0, 0.34, 0.3)] * 4,
            "8": [draw(1.35, 1.0, 0.5, 0.2), draw(1.24, 0.95, 0.56, 0.15), draw(1.35, 1.0, 0.5, 0.2),
                  draw(1.12, 0.9, 0.6, 0.1)]}
    return {"ideal_s": IDEAL, "qps": {q: R.summary(rounds, IDEAL) for q, rounds in rows.items()},
            "setup": {"knobs": {"qps": [1, 2, 4, 8], "rounds": 4}}, "series": {}, "pinning": pinning()}


def pinning(pinned_over=1.8, spread_over=1.1, on_one_uplink=2, paths=PINNED_PATHS, cpu=0.5):
    """The pinning part as a run records it: pinned, a leaf's two connections on one uplink (full)
    and the other idle, 1.8x the prediction; hashed, 1.1x."""
    pinned = draw(pinned_over, 1.0, 0.0, 0.5, cpu=cpu, ideal=SPREAD, paths=paths)
    spread = [draw(spread_over, 0.95, 0.85, 0.05, ideal=SPREAD) for _ in range(2)]
    return {"hosts": ["g0h0", "g1h0", "g0h2", "g1h2"], "spines": 2, "qps": 16,
            "predicted": {"pinned_s": round(1.8 * SPREAD, 4), "spread_s": SPREAD, "loss": 0.444,
                          "paths": PINNED_PATHS, "max_on_one_uplink": on_one_uplink},
            "pinned": R.summary([pinned], SPREAD), "spread": R.summary(spread, SPREAD),
            "pinned_as_modelled": sorted(map(tuple, paths)) == sorted(map(tuple, PINNED_PATHS))}


def pinning_spreads_a_contiguous_job(figures):
    """The opposite setting: a job on a leaf's first hosts (indices 0 and 1) under 2 spines, which
    pinning by destination index puts on different uplinks: pinned as fast as hashed."""
    figures["pinning"] = pinning(pinned_over=1.0, spread_over=1.1, on_one_uplink=1)


def pinning_lost_less_than_meta(figures):
    figures["pinning"] = pinning(pinned_over=1.3)


def pinned_not_where_the_policy_puts_it(figures):
    figures["pinning"] = pinning(paths=PINNED_PATHS[1:])


def pinning_part_busy(figures):
    figures["pinning"] = pinning(cpu=0.97)


def pinned_slower_than_its_traced_paths(figures):
    figures["pinning"]["pinned"] = R.summary([draw(2.6, 1.0, 0.0, 0.5, traced=1.8, ideal=SPREAD,
                                                    paths=PINNED_PATHS)], SPREAD)


def more_qps_change_nothing(figures):
    """The opposite setting: a hash that ignores UDP's ports (a three-tuple hash) gives every QP of
    a connection its first QP's path, so 8 QPs measure what 1 QP did."""
    for q in ("2", "4", "8"):
        figures["qps"][q] = copy.deepcopy(figures["qps"]["1"])


def one_qp_happened_to_balance(figures):
    figures["qps"]["1"] = R.summary([draw(1.0, 0.9, 0.9, 0.0)] * 4, IDEAL)


def busy(figures):
    figures["qps"]["4"]["cpu_busy"] = 0.96


def sender_lagged(figures):
    figures["qps"]["8"]["sent_fraction"] = 0.8


def a_full_port_delivered_nothing(figures):
    rounds = figures["qps"]["2"]["rounds"]
    rounds[0] = {**rounds[0], "completion_s": None}     # a full port delivered nothing
    figures["qps"]["2"] = R.summary(rounds, IDEAL)


def an_uplink_carried_what_its_traces_do_not_say(figures):
    figures["qps"]["4"]["rounds"][0]["uplink_expected"]["pl0l0-eth6"] = 0.0
    figures["qps"]["4"] = R.summary(figures["qps"]["4"]["rounds"], IDEAL)


def slower_than_its_own_paths(figures):
    figures["qps"]["1"] = R.summary([draw(3.0, 1.0, 0.0, 0.5, traced=1.8)] * 4, IDEAL)


CASES = [
    ("recorded", [], REPRODUCED),
    ("the opposite setting: more QPs change nothing", [more_qps_change_nothing], NOT_REPRODUCED),
    ("one QP happened to balance", [one_qp_happened_to_balance], NOT_REPRODUCED),
    ("8 QPs no faster than 1", [put("qps.8.completion_s", 2.0 * IDEAL), put("qps.8.over_ideal", 2.0),
                                 put("qps.8.traced_s", 2.0 * IDEAL)],
     NOT_REPRODUCED),
    ("the shares did not converge", [put("qps.8.spread", 0.5)], NOT_REPRODUCED),
    ("CPU busy", [busy], INVALID),
    ("the sender lagged its timetable", [sender_lagged], INVALID),
    ("a full port delivered nothing", [a_full_port_delivered_nothing], INVALID),
    ("slower than the fluid model of its traced paths", [slower_than_its_own_paths], INVALID),
    ("an uplink off its traced load", [an_uplink_carried_what_its_traces_do_not_say], INVALID),
    ("the opposite setting for pinning: a contiguous job", [pinning_spreads_a_contiguous_job],
     NOT_REPRODUCED),
    ("pinning lost less than Meta's 30%", [pinning_lost_less_than_meta], NOT_REPRODUCED),
    ("pinned paths not the static policy's", [pinned_not_where_the_policy_puts_it], INVALID),
    ("CPU busy in the pinning part", [pinning_part_busy], INVALID),
    ("pinned slower than the fluid model of its traced paths", [pinned_slower_than_its_traced_paths],
     INVALID),
]


@pytest.mark.parametrize("case,changes,expected", CASES, ids=[c[0] for c in CASES])
def test_judge(case, changes, expected):
    figures = recorded()
    for change in changes:
        change(figures)
    judgement = scenarios.get("roce-entropy").judge(figures)
    assert judgement.verdict == expected, judgement.measured
    assert judgement.expectation and judgement.measured


def test_the_recorded_run_reports_the_gain_against_meta():
    judgement = scenarios.get("roce-entropy").judge(recorded())
    assert judgement.derived["gain"] == pytest.approx(2.025 / 1.265, abs=0.01)
    assert "Meta" in judgement.headline and "Meta: up to +40%" in judgement.measured
    assert judgement.derived["pinning_loss"] == pytest.approx(1 - 1 / 1.8, abs=0.01)
    assert "Meta: >30%" in judgement.measured and "pinning lost 44%" in judgement.headline


def test_figures_without_the_pinning_part_are_judged_on_the_sweep_alone():
    figures = recorded()
    del figures["pinning"]
    judgement = scenarios.get("roce-entropy").judge(figures)
    assert judgement.verdict == REPRODUCED and "pinning" not in judgement.measured


def test_the_partly_allocated_job_pins_two_connections_per_uplink():
    """On 2 spines, the job's hosts are those of index 0 and 2 of each leaf: static routing by
    destination index modulo 2 sends both of a leaf's connections up one uplink, 1.8x the
    prediction at pace 0.9 (a loss of 44%)."""
    scenario = scenarios.get("roce-entropy").configure({}, quick=True)
    fab = scenario.fabric(spines=PN.PIN_SPINES)
    hops = ring.ring_hops(PN.job_ring(fab))
    assert [a.host for a, _ in hops] == ["g0h0", "g1h0", "g0h2", "g1h2"]
    line = fab.line_mbit(hops[0][0])
    pred = PN.prediction(fab, hops, 24.0, 0.9 * line)
    assert pred["max_on_one_uplink"] == 2
    assert pred["pinned_s"] == pytest.approx(1.8 * pred["spread_s"], rel=1e-4)
    assert pred["loss"] == pytest.approx(1 - 1 / 1.8, abs=1e-3)
    assert pred["paths"] == PINNED_PATHS


def test_every_ring_hop_crosses_the_spines():
    fab = scenarios.get("roce-entropy").configure({}, quick=True).fabric()
    hops = ring.ring_hops(ring.ring_order(fab))
    assert len(hops) == 8
    leaf = {nic.name: fab.attachments(nic)[0][0] for nic in fab.nics()}
    assert all(leaf[a.name] != leaf[b.name] for a, b in hops)
    assert sorted(a.name for a, _ in hops) == sorted(b.name for _, b in hops)   # one ring


def test_the_prediction_is_the_ring_at_its_paced_rate_when_spread_over_every_spine():
    fab = scenarios.get("roce-entropy").configure({}, quick=True).fabric()
    hops = ring.ring_hops(ring.ring_order(fab))
    src, dst = hops[0]
    paths = ring.spread_paths(fab, src, dst)
    assert len(paths) == 4 and len({p[1] for p in paths}) == 4      # one per leaf uplink
    # 4 hosts per leaf at 0.9 of the line rate spread over 4 uplinks of the same rate: nothing is full
    line = fab.line_mbit(src)
    assert ring.ideal_seconds(fab, hops, 56.0, 0.9 * line) == pytest.approx(56.0 / (0.9 * line))


def test_source_ports_are_roces_and_distinct():
    ports = ring.draw_sports(random.Random(1), 8, 8)
    flat = [p for hop in ports for p in hop]
    assert len(ports) == 8 and all(len(h) == 8 for h in ports)
    assert len(set(flat)) == 64 and all(49152 <= p <= 65535 for p in flat)


@pytest.mark.parametrize("settings,words", [
    ({"qps": "8,1"}, "ascending"), ({"qps": "4"}, "two or more"), ({"planes": 2}, "not a parameter"),
    ({"spines": 1}, "needs 2 or more"), ({"qps": "1,32"}, "qps"),
    ({"hosts_per_leaf": 2}, "more hosts per leaf")])
def test_bad_parameters_are_refused_before_anything_is_built(settings, words):
    with pytest.raises(ParamError, match=words):
        scenarios.get("roce-entropy").configure(settings, quick=True)


def test_undefined_ratios_are_none_not_infinity():
    """An idle least busy uplink or one QP at the prediction leave ratios undefined: None, which
    JSON can hold (Infinity is not JSON)."""
    figures = recorded()
    one_qp_happened_to_balance(figures)
    figures["qps"]["1"]["least_util"] = 0.0
    judgement = scenarios.get("roce-entropy").judge(figures)
    assert judgement.derived["excess_left"] is None and judgement.derived["busiest_over_least"] is None
    assert judgement.verdict == NOT_REPRODUCED


def test_the_opposite_setting_a_contiguous_job_is_not_pinned_onto_one_uplink():
    """The job on a leaf's hosts 0 and 1 instead: destination index modulo 2 spines sends them
    up different uplinks, so pinning loses nothing (what pinning_spreads_a_contiguous_job feeds
    the judge)."""
    scenario = scenarios.get("roce-entropy").configure({}, quick=True)
    fab = scenario.fabric(spines=PN.PIN_SPINES)
    nics = {h: fab.hosts[h].nics[0] for h in ("g0h0", "g1h0", "g0h1", "g1h1")}
    hops = ring.ring_hops(list(nics.values()))
    pred = PN.prediction(fab, hops, 24.0, 0.9 * fab.line_mbit(hops[0][0]))
    assert pred["max_on_one_uplink"] == 1
    assert pred["pinned_s"] == pytest.approx(pred["spread_s"], rel=1e-4)
    assert pred["loss"] == pytest.approx(0, abs=1e-3)
