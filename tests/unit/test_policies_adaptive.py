"""Routing policies: adaptive planning (moving elephants off hot links)."""
import pytest

from testbed.model import make_fabric
from testbed.model import policies as P


def fwd_of(fab):
    routes = P.all_routes(fab)
    return P.Forwarding(fab, routes, P.core_rules(fab, routes))


def sightings(fab, src, dst, spine):
    """Where a SYN from `src` to `dst` enters each switch if the leaf sends it to `spine`."""
    peer, adj = fab.port_peer(), fab.adjacency()
    (l0, p0), (l1, _) = fab.attachments(src)[0], fab.attachments(dst)[0]
    up = next(p for p, nbr, _ in adj[l0] if nbr == spine)
    down = next(p for p, nbr, _ in adj[spine] if nbr == l1)
    return {l0: p0, spine: peer[(l0, up)][1], l1: peer[(spine, down)][1]}


def two_flows_on_one_spine(fab, fwd, rate=4.75):
    flows = {}
    for i, (s, d) in enumerate([("g0h0-n0", "g1h0-n0"), ("g0h1-n0", "g1h1-n0")]):
        src, dst = fab.nic(s), fab.nic(d)
        key = P.FiveTuple(src.ip, dst.ip, 6, 40000 + i, 5201)
        flow = P.TrackedFlow(key, sightings(fab, src, dst, "pl0s0"))
        flow.hops = P.path_from_sightings(fwd, dst.ip, flow.seen)
        flow.rate = rate
        flows[key] = flow
    return flows


def loads(fab, fwd, flows):
    cap = P.link_capacity(fab)
    rate = {l: 0.0 for l in cap}
    for f in flows.values():
        for l in P.switch_links(f.hops, fwd):
            rate[l] += f.rate
    return rate, cap


def test_path_from_sightings():
    fab = make_fabric("mpft")
    fwd = fwd_of(fab)
    src, dst = fab.nic("g0h0-n0"), fab.nic("g1h1-n0")
    seen = sightings(fab, src, dst, "pl0s1")
    hops = P.path_from_sightings(fwd, dst.ip, seen)
    assert [h.switch for h in hops] == ["pl0l0", "pl0s1", "pl0l1"]
    assert P.switch_links(hops, fwd) == [("pl0l0", hops[0].out_port), ("pl0s1", hops[1].out_port)]
    assert hops[-1].out_port == fab.attachments(dst)[0][1]
    partial = dict(seen)
    del partial["pl0s1"]
    assert P.path_from_sightings(fwd, dst.ip, partial) is None   # not all SYN copies in yet
    assert P.ingress_of(fwd, seen) == fab.attachments(src)[0]


def test_plan_moves_separates_two_elephants_on_one_uplink():
    fab = make_fabric("mpft", {"scale": 0.025})   # 10 Mbit/s links
    fwd = fwd_of(fab)
    flows = two_flows_on_one_spine(fab, fwd)
    rate, cap = loads(fab, fwd, flows)
    moves = P.plan_moves(fwd, flows, rate, cap, now=100.0)
    assert len(moves) == 1          # one move relieves the leaf uplink and the spine downlink
    m = moves[0]
    assert m.at in P.switch_links(flows[m.key].hops, fwd)
    new = P.switch_links(list(m.hops), fwd)
    other = next(f for k, f in flows.items() if k != m.key)
    assert not set(new) & set(P.switch_links(other.hops, fwd))
    assert m.pins == {"pl0l0": m.hops[0].out_port} and m.score < 0.8
    # the rules: a counting rule for each flow at its first switch, the moved one pinned there
    flows[m.key].hops, flows[m.key].pins = list(m.hops), m.pins
    rules = P.flow_rules(flows.values(), fwd)
    assert rules == {("pl0l0", m.key): m.hops[0].out_port, ("pl0l0", other.key): None}


def test_plan_moves_leaves_alone_what_it_cannot_improve():
    fab = make_fabric("mpft", {"scale": 0.025})
    fwd = fwd_of(fab)
    flows = two_flows_on_one_spine(fab, fwd)
    rate, cap = loads(fab, fwd, flows)
    # not hot
    assert P.plan_moves(fwd, flows, {l: r * 0.5 for l, r in rate.items()}, cap, now=100.0) == []
    # one elephant only
    mice = dict(flows)
    next(iter(mice.values())).rate = 0.5
    assert P.plan_moves(fwd, mice, rate, cap, now=100.0) == []
    # every alternative is as busy
    flows = two_flows_on_one_spine(fab, fwd)
    busy = {l: (r if r else 9.5) for l, r in rate.items()}
    assert P.plan_moves(fwd, flows, busy, cap, now=100.0) == []
    # a flow moved a moment ago stays put for `hold` seconds
    for f in flows.values():
        f.moved_at = 99.5
    assert P.plan_moves(fwd, flows, rate, cap, now=100.0, hold=2.0) == []
    assert P.plan_moves(fwd, flows, rate, cap, now=102.0, hold=2.0)


def test_plan_moves_can_diverge_before_the_hot_switch():
    """clos3: two flows share an edge uplink and, above it, an aggregation uplink. Diverging at the
    aggregation switch would leave the edge uplink shared: the move diverges at the edge."""
    fab = make_fabric("clos3")
    fwd = fwd_of(fab)
    flows = {}
    for s, d in [("p0e0h0", "p1e0h0"), ("p0e0h1", "p1e1h0")]:
        src, dst = fab.nic(s), fab.nic(d)
        sw, port = fab.attachments(src)[0]
        hops = P.all_paths(fwd, sw, port, dst.ip)[0]     # both take the first port at every tier
        key = P.FiveTuple(src.ip, dst.ip, 6, 40000, 5201)
        flows[key] = P.TrackedFlow(key, {h.switch: h.in_port for h in hops}, hops, rate=2.4)
    a, b = (P.switch_links(f.hops, fwd) for f in flows.values())
    assert a[:2] == b[:2]                                # edge and aggregation uplinks shared
    rate, cap = loads(fab, fwd, flows)
    [m] = P.plan_moves(fwd, flows, rate, cap, now=10.0)
    assert m.hops[0].switch == "p0e0" and m.hops[0].out_port != a[0][1]
    other = next(f for k, f in flows.items() if k != m.key)
    assert not set(P.switch_links(list(m.hops), fwd)) & set(P.switch_links(other.hops, fwd))


def test_update_rate_and_prune():
    key = P.FiveTuple("10.0.0.1", "10.0.1.1", 6, 1, 2)
    f = P.TrackedFlow(key, active_at=0.0)
    P.update_rate(f, 1000, 1.0)
    assert f.rate == 0.0
    P.update_rate(f, 126000, 1.5)      # 125 kB in 0.5 s = 2 Mbit/s
    assert f.rate == pytest.approx(2.0) and f.active_at == 1.5
    P.update_rate(f, 10, 2.0)          # a reinstalled rule starts counting again: no bogus rate
    assert f.rate == pytest.approx(2.0)

    fab = make_fabric("mpft")
    fwd = fwd_of(fab)
    flows = two_flows_on_one_spine(fab, fwd)
    for f in flows.values():
        f.active_at = 100.0
    first = next(iter(flows.values()))
    down = frozenset({(first.hops[1].switch, first.hops[1].out_port)})   # the spine's downlink
    keys = list(flows)
    assert P.prune(flows, fwd, down, now=101.0) == keys and not flows    # both used it
    flows = two_flows_on_one_spine(fab, fwd)
    for f in flows.values():
        f.active_at = 100.0
    keys = list(flows)
    down = frozenset({(first.hops[0].switch, first.hops[0].in_port)})    # the first host's port
    assert P.prune(flows, fwd, down, now=101.0) == keys[:1] and list(flows) == keys[1:]
    flows = two_flows_on_one_spine(fab, fwd)
    for f in flows.values():
        f.active_at = 100.0
    list(flows.values())[0].active_at = 80.0
    dropped = P.prune(flows, fwd, frozenset(), now=101.0, idle=10.0)
    assert len(dropped) == 1 and len(flows) == 1


def test_link_capacity_uses_the_emulated_rate():
    fab = make_fabric("mpft")
    cap = P.link_capacity(fab)
    l = fab.switch_links()[0]
    assert cap[(l.a, l.a_port)] == cap[(l.b, l.b_port)] == l.gbps * fab.params.scale == 20.0
