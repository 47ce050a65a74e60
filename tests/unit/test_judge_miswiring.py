"""miswiring (C9): its judge on recorded figures, and its pure model (where the cables end, what
the routes over them can carry), no fabric, no root."""
import copy

import pytest

from scenarios import scenario_class
from scenarios.claims import miswiring as M
from testbed.core.errors import ParamError
from testbed.scenario.base import INVALID, NOT_REPRODUCED, REPRODUCED

PAIRS = ["p0s0h0-n0 -> p0s0h1-n0", "p0s0h0-n1 -> p0s0h1-n1", "p0s0h1-n0 -> p0s0h0-n0",
         "p0s0h1-n1 -> p0s0h0-n1"]
NAMED = [["p0s0h0-n0p0", "p0s0r0t1-eth2"], ["p0s0h1-n0p1", "p0s0r0t0-eth1"]]


def fabric_run(wiring_passed, named, at, mbps, tier2, tier3, queue, busy):
    return {"wiring": {"passed": wiring_passed, "detail": "(recorded)", "at_s": at, "named": named},
            "ping": {"passed": True, "detail": "48/48 NIC pairs answer ping", "at_s": at + 0.2, "named": []},
            "ping_pairs": 48, "ping_failed": 0, "traffic_from_s": at + 0.2,
            "pairs_mbps": dict(zip(PAIRS, mbps)), "tier2_mbps": tier2, "tier3_mbps": tier3,
            "core_queue_kb": queue, "cpu_busy": busy}


def recorded():
    """A quick run here (swap=plane, scale 0.03), trimmed to what the judge reads."""
    def pair(rail, bound_m, tier_m):
        return {"rail": rail, "line_mbps": 12.0, "bound_mbps": 12.0, "bound_miswired_mbps": bound_m,
                "tier": 1, "tier_miswired": tier_m, "ratio": round(bound_m / 12.0, 3)}
    return {"setup": {"miswire": "p0s0r0t0-eth1,p0s0r0t1-eth2"}, "series": {},
            "model": dict(zip(PAIRS, [pair(0, 3.2, 3), pair(1, 12.0, 1), pair(0, 3.2, 3), pair(1, 12.0, 1)])),
            "expected_named": NAMED,
            "blueprint": fabric_run(True, [], 1.37, [11.22, 11.21, 11.23, 11.19], 0.0, 0.0, 0.0, 0.724),
            "miswired": fabric_run(False, NAMED, 0.16, [1.14, 11.21, 1.98, 11.2], 3.25, 3.16, 26.5, 0.759)}


def judge(figures):
    return scenario_class("miswiring")().judge(figures)


def test_reproduced():
    j = judge(recorded())
    assert j.verdict == REPRODUCED, j.measured
    assert j.derived["named_exactly"] and j.derived["affected"] == [PAIRS[0], PAIRS[2]]
    assert "kept 10%" in j.headline and "exactly" in j.headline


def changed(edit):
    figures = copy.deepcopy(recorded())
    edit(figures)
    return judge(figures).verdict


@pytest.mark.parametrize("edit", [
    lambda f: f["miswired"]["ping"].update(passed=False),                    # ping saw it: not quiet
    lambda f: f["miswired"]["wiring"].update(named=NAMED[:1]),               # one cable missed
    lambda f: f["miswired"]["wiring"].update(named=NAMED + [["a", "b"]]),    # one too many
    lambda f: f["blueprint"]["wiring"].update(passed=False),                 # a false alarm
    lambda f: f["miswired"]["wiring"].update(at_s=5.0),                      # after the traffic began
    lambda f: f["miswired"]["pairs_mbps"].update({PAIRS[0]: 9.0}),           # the rail lost nothing
    lambda f: f["miswired"]["pairs_mbps"].update({PAIRS[1]: 5.0}),           # another rail lost too
    lambda f: f["miswired"].update(tier3_mbps=0.1),                          # never reached the core
    lambda f: f["blueprint"].update(tier3_mbps=3.0),                         # the blueprint used it too
])
def test_not_reproduced(edit):
    assert changed(edit) == NOT_REPRODUCED


@pytest.mark.parametrize("edit", [
    lambda f: f["miswired"].update(cpu_busy=0.95),
    lambda f: f["blueprint"]["pairs_mbps"].update({PAIRS[1]: 6.0}),          # the baseline fell short
])
def test_invalid(edit):
    assert changed(edit) == INVALID


# ---- the model ----

def configured(**settings):
    return scenario_class("miswiring")().configure(settings, quick=True)


def test_plane_swap_sends_the_rail_over_the_core():
    sc = configured()
    fab = sc.fabric()
    swaps = sc.swaps(fab)
    assert M.miswired_cables(fab, swaps) == NAMED
    m = M.model(fab, swaps)
    core = 4 * fab.params.uplink_gbps / fab.params.core_oversubscription * fab.params.scale
    for k in (PAIRS[0], PAIRS[2]):    # both ports meet the other host's over the four core links
        assert m[k]["bound_miswired_mbps"] == pytest.approx(core, abs=0.01) and m[k]["tier_miswired"] == 3
    assert all(m[k]["ratio"] == 1 and m[k]["tier_miswired"] == 1 for k in (PAIRS[1], PAIRS[3]))


def test_rail_swap_detours_over_tier_2_at_full_capacity():
    sc = configured(swap="rail")
    m = M.model(sc.fabric(), sc.swaps(sc.fabric()))
    assert all(v["ratio"] == 1 and v["tier_miswired"] == 2 for v in m.values())


def test_explicit_ports_and_their_expectation():
    sc = configured(swap="p0s0r0t0-eth1,p0s0r0t1-eth2")
    assert M.model(sc.fabric(), sc.swaps(sc.fabric()))[PAIRS[0]]["ratio"] < M.AFFECTED


def test_max_flow():
    cap = {"s": {"a": 3, "b": 2}, "a": {"t": 2, "b": 5}, "b": {"t": 3}}
    assert M.max_flow(cap, "s", "t") == 5


@pytest.mark.parametrize("settings, why", [
    ({"swap": "p0s0r0t0-eth3,p0s0r1t1-eth3"}, "host cables only"),        # switch-to-switch cables
    ({"swap": "plane", "pods": 1}, "no path at all"),                      # the planes never meet
    ({"swap": "plane", "single_tor": True}, "dual-ToR"),
    ({"swap": "p0s0r0t0-eth1,p0s0r0t0-eth2"}, "changes no path"),
    ({"swap": "nosuch"}, "choose plane, rail"),
    ({"hosts": 1}, "hosts >= 2"),
])
def test_meaningless_parameters_are_refused(settings, why):
    with pytest.raises(ParamError, match=why):
        configured(**settings)
