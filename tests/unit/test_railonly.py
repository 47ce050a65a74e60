"""The railonly family (claim C13): HPN's segments under a tier 2 that connects only same-rail
ToRs, the pod it buys at full scale, and how routing, checks, wiring and pictures treat it."""
import itertools
import random

import pytest

from testbed.measure.checks import ping_pairs
from testbed.model import budget as B
from testbed.model import make_fabric, wiring
from testbed.model.draw import draw
from testbed.model.families import get
from testbed.model.policies import Forwarding, all_routes
from testbed.model.routing import routes_to, shortest_path_links


@pytest.fixture(scope="module")
def fab():
    return make_fabric("railonly")


def top_tier(fab, a, b):
    return max(fab.switches[l.b].tier for l in shortest_path_links(fab, a, b))


def test_every_aggregation_switch_takes_one_rail(fab):
    sw = fab.switches
    rails = {}
    for l in fab.switch_links():
        assert sw[l.a].role == "tor" and sw[l.b].role == "agg"
        assert sw[l.a].coords[2] == sw[l.b].coords[1]          # ToR rail == aggregation's rail
        assert sw[l.a].plane == sw[l.b].plane                  # dual-plane, as HPN
        rails.setdefault(l.b, set()).add(sw[l.a].coords[2])
    assert len(rails) == 8 and all(len(r) == 1 for r in rails.values())
    assert sorted(n for n in sw if sw[n].role == "agg")[:2] == ["p0r0a0n0", "p0r0a0n1"]


def test_below_tier_2_it_is_hpn():
    settings = {"pods": 1, "segments": 2, "nics": 4, "rails": 2}
    ro, hpn = make_fabric("railonly", settings), make_fabric("hpn", settings)
    assert ro.hosts == hpn.hosts and ro.host_links() == hpn.host_links()
    assert {n for n in ro.switches if ro.switches[n].role == "tor"} == \
        {n for n in hpn.switches if hpn.switches[n].role == "tor"}
    # the same number of aggregation switches per rail as HPN has per pod
    assert sum(s.role == "agg" for s in ro.switches.values()) == \
        2 * sum(s.role == "agg" for s in hpn.switches.values())


def test_in_one_pod_only_same_rail_nics_have_a_path(fab):
    for a, b in itertools.permutations(fab.nics(), 2):
        assert fab.reachable(a, b) == (a.rail == b.rail), (a.name, b.name)
    a, b = fab.nic("p0s0h0-n0"), fab.nic("p0s1h0-n0")
    assert top_tier(fab, a, b) == 2 and fab.equal_cost_paths(a, b) == 4


def test_with_pods_the_core_joins_the_rails_as_a_detour():
    fab = make_fabric("railonly", {"pods": 2})
    hpn = make_fabric("hpn", {"pods": 2, "segments": 2})
    a, b = fab.nic("p0s0h0-n0"), fab.nic("p0s1h0-n1")           # one pod, two rails
    assert fab.reachable(a, b) and top_tier(fab, a, b) == 3
    assert top_tier(hpn, hpn.nic(a.name), hpn.nic(b.name)) == 2
    # the core's uplinks carry HPN's 15:1 of what each aggregation switch has below
    core = [l for l in fab.switch_links() if fab.switches[l.b].role == "core"]
    assert {round(l.gbps, 3) for l in core} == {round(2 * 400 / 15 / 2, 3)}


def test_arithmetic_counts_what_build_makes():
    rng = random.Random(13)
    for _ in range(40):
        settings = {"pods": rng.randint(1, 3), "segments": rng.randint(1, 3), "hosts": rng.randint(1, 3),
                    "nics": rng.randint(2, 4), "rails": rng.randint(1, 2),
                    "aggs_per_plane": rng.randint(1, 2),
                    "single_tor": rng.random() < 0.3, "radix": 1000}
        fab = make_fabric("railonly", settings)
        size = fab.params.size()
        assert (size.switches, size.hosts, size.links) == (len(fab.switches), len(fab.hosts), len(fab.links))
        down = {n: sum(1 for l in fab.links if l.b == n) for n in fab.switches}
        aggs = [n for n in fab.switches if fab.switches[n].role == "agg"]
        assert max(down[n] for n in aggs) == fab.params.ports()["agg"][0], settings


def test_routes_stop_at_the_rail(fab):
    nic = fab.nic("p0s1h0-n1")
    holders = {sw for sw, _ in fab.attachments(nic)}
    routed = {r.switch for r in routes_to(fab, nic.ip, nic.mac, fab.attachments(nic))}
    assert routed == {n for n, s in fab.switches.items()
                      if (s.role == "tor" and s.coords[2] == 1) or (s.role == "agg" and s.coords[1] == 1)}
    assert holders <= routed
    # a packet from rail 0 toward it is dropped at its first ToR: the walk finds no path
    fwd = Forwarding(fab, all_routes(fab))
    src = fab.nic("p0s0h0-n0")
    assert fwd.walk(*fwd.ingress(src), nic.ip, lambda sw, port, choices: choices[0]) is None


def test_reachability_check_pings_only_connected_pairs(fab):
    pairs = ping_pairs(fab)
    assert pairs and all(a.rail == b.rail for a, b in pairs)
    assert len(pairs) == sum(1 for a, b in itertools.permutations(fab.nics(), 2)
                             if a.host != b.host and a.rail == b.rail)
    big = make_fabric("railonly", {"hosts": 20})                  # 80 NICs: the sample
    sample = ping_pairs(big)
    assert sample and all(a.rail == b.rail for a, b in sample)
    assert {a.name for a, _ in sample} == {n.name for n in big.nics()}


def test_the_wiring_check_reads_the_blueprint(fab):
    seen = dict(wiring.blueprint_peer(fab))
    assert wiring.wrong_cables(fab, seen) == []
    tor_up = fab.switch_links()                                   # one pod: all ToR uplinks
    x = next(l for l in tor_up if fab.switches[l.a].coords[2] == 0)
    y = next(l for l in tor_up if fab.switches[l.a].coords[2] == 1)
    swaps = wiring.parse_swaps(fab, [f"{x.a_intf},{y.a_intf}"])     # two rails' uplinks crossed
    seen = {}
    for u, v in wiring.miswire(fab, swaps):
        seen[u], seen[v] = v, u
    assert len(wiring.wrong_cables(fab, seen)) == 2


def test_drawn_by_rail(fab, tmp_path):
    path = draw(fab, tmp_path / "railonly.png")
    assert path.read_bytes().startswith(b"\x89PNG")


@pytest.fixture(scope="module")
def c13():
    return B.budget("railonly")


def test_budget_shows_the_pod_a_rail_only_tier_2_buys(c13):
    assert set(c13) == {"meta", "C13"}
    e = c13["C13"]
    assert e["gpus_per_pod"]["figure"] == 122_880 and e["gpus_per_pod"]["shown"] == 120_000
    assert e["hpn_gpus_per_pod"]["figure"] == 15_360
    assert e["pod_ratio"]["figure"] == 8 and e["segments_per_pod"]["figure"] == 120
    assert e["cross_rail_uplinks"]["figure"] == 0 and e["islands_joining_rails"]["figure"] == 0
    assert all(x["match"] for x in e.values()), [k for k, x in e.items() if not x["match"]]
    assert c13["meta"]["built"]["nics"] == 120 * 136 * 8
    assert any("120,000 (122,880)" in line for line in B.render_text(c13))


def test_budget_preset_is_hpns_paper_shape_in_one_pod():
    ro, hpn = get("railonly").budget.presets["paper"], get("hpn").budget.presets["paper"]
    assert {k: v for k, v in ro.items() if k not in ("pods", "segments")} == \
        {k: v for k, v in hpn.items() if k not in ("pods", "segments")}
    assert (ro["pods"], ro["segments"]) == (1, 120)
    assert get("railonly").budget.claims == ("C13",)
