"""Routing policies as pure functions: per-port core, static per destination, adaptive planning."""
import random

import pytest

from testbed.core.errors import ParamError
from testbed.model import make_fabric
from testbed.model import policies as P


def fwd_of(fab, down=frozenset(), core=None):
    routes = P.all_routes(fab, down)
    rules = P.core_rules(fab, routes) if core is None else core
    return P.Forwarding(fab, routes, rules)


# ---- options --------------------------------------------------------------------------------

def test_normalize_defaults_and_errors():
    hpn, clos = make_fabric("hpn"), make_fabric("clos3")
    r = P.normalize(hpn, {})
    assert (r["policy"], r["core"], r["ecmp"], r["matrix"]) == ("ecmp", "per-port", "seeded", [])
    assert P.normalize(clos, {})["core"] == "ecmp"
    assert P.normalize(hpn, {"policy": "static", "matrix": [["p0s0h0", "p1s0h1-n1"]]})["matrix"] \
        == [["10.0.0.1", "10.1.1.2"]]
    for bad in ({"policy": "spray"}, {"core": "x"}, {"ecmp": "y"}, {"nosuch": 1},
                {"matrix": [["p0s0h0", "p1s0h0"]]},                    # matrix without static
                {"policy": "static", "matrix": [["p0s0h0", "nope"]]},
                {"policy": "static", "matrix": [["p0s0h0"]]},
                {"interval": 0}, {"hot": "warm"}):
        with pytest.raises(ParamError):
            P.normalize(hpn, bad)


# ---- per-port core (C8) -------------------------------------------------------------------------

def test_core_pairing_keeps_plane_and_index():
    fab = make_fabric("hpn", {"pods": 3})
    peer = fab.port_peer()
    pairing = P.core_pairing(fab)
    cores = [s for s in fab.switches.values() if s.role == "core"]
    # every core port toward an aggregation switch is paired with each other pod
    assert len(pairing) == sum(fab.ports_of(c.name) for c in cores) * (3 - 1)
    for (core, in_port, pod), out_port in pairing.items():
        came, went = fab.switches[peer[(core, in_port)][0]], fab.switches[peer[(core, out_port)][0]]
        assert came.pod != pod and went.pod == pod
        assert (came.plane, came.coords[1:]) == (went.plane, went.coords[1:])


def test_core_rules_only_where_the_paired_port_is_on_a_shortest_path():
    fab = make_fabric("hpn")
    routes = P.all_routes(fab)
    rules = P.core_rules(fab, routes)
    by_route = {(r.switch, r.ip): r for r in routes}
    pod_of = {n.ip: fab.hosts[n.host].pod for n in fab.nics()}
    assert rules
    for c in rules:
        assert c.port in by_route[(c.switch, c.ip)].ports and c.port != c.in_port
        assert c.fallback == by_route[(c.switch, c.ip)].ports
        assert fab.switches[fab.port_peer()[(c.switch, c.in_port)][0]].pod != pod_of[c.ip]
    # one rule per (core, in-port from another pod, destination)
    cores = [s for s in fab.switches if fab.switches[s].role == "core"]
    assert len(rules) == len(cores) * 4 * len(fab.nics())   # 4 aggregation switches per other pod
    # a dead paired port: no rule points at it, the route's ECMP group (without it) takes over
    c0 = rules[0]
    peer = fab.port_peer()[(c0.switch, c0.port)]
    down = frozenset({(c0.switch, c0.port), peer})
    after = P.core_rules(fab, P.all_routes(fab, down))
    assert all(r.port != c0.port or r.switch != c0.switch for r in after)
    assert not [r for r in after if (r.switch, r.in_port, r.ip) == (c0.switch, c0.in_port, c0.ip)]
    # no core fabric, no rules
    assert P.core_rules(make_fabric("mpft"), P.all_routes(make_fabric("mpft"))) == []


def test_per_port_core_keeps_every_path_in_the_plane_of_its_first_tor():
    fab = make_fabric("hpn")
    fwd = fwd_of(fab)
    checked = 0
    for src in fab.nics():
        for dst in fab.nics():
            if src.host == dst.host:
                continue
            for sw, port in fab.attachments(src):
                plane = fab.switches[sw].plane
                paths = P.all_paths(fwd, sw, port, dst.ip)
                assert paths
                for hops in paths:
                    assert {fab.switches[h.switch].plane for h in hops
                            if fab.switches[h.switch].role in ("tor", "agg")} == {plane}
                    checked += 1
    assert checked > 100
    # with an ECMP core the same fabric crosses planes at the core
    ecmp = fwd_of(fab, core=[])
    src, dst = fab.nic("p0s0h0-n0"), fab.nic("p1s0h0-n0")
    sw, port = fab.attachments(src)[0]
    planes = {fab.switches[h.switch].plane for hops in P.all_paths(ecmp, sw, port, dst.ip) for h in hops
              if fab.switches[h.switch].role == "agg"}
    assert planes == {0, 1}


# ---- static per destination (C12) ---------------------------------------------------------

def permutation(fab, seed):
    """A random permutation traffic matrix within each set of mutually reachable NICs (MPFT's
    planes are disjoint), without a host sending to itself."""
    rng = random.Random(seed)
    classes = []
    for nic in fab.nics():
        home = next((c for c in classes if fab.reachable(c[0], nic)), None)
        (home.append(nic) if home else classes.append([nic]))
    matrix = []
    for nics in classes:
        perm = nics[:]
        rng.shuffle(perm)
        matrix += [(a.ip, b.ip) for a, b in zip(nics, perm) if a.host != b.host]
    return matrix


STATIC_FABRICS = [("mpft", {}), ("mpft", {"leaves": 4, "spines": 4, "hosts_per_leaf": 4}),
                  ("mrft", {"leaves": 4, "spines": 4, "hosts_per_leaf": 4}),
                  ("clos3", {}), ("clos3", {"cores": 4}), ("hpn", {})]


@pytest.mark.parametrize("family,settings", STATIC_FABRICS)
def test_static_routes_give_permutations_disjoint_links(family, settings):
    fab = make_fabric(family, settings)
    routes = P.all_routes(fab)
    core = P.core_rules(fab, routes) if family == "hpn" else []
    for seed in range(10):
        matrix = permutation(fab, seed)
        static = P.static_routes(fab, routes, matrix, core)
        # one port per destination everywhere (only per-port core rules still look at in_port)
        assert all(len(r.ports) == 1 for r in static)
        paths = P.matrix_paths(fab, static, matrix, core)
        assert all(paths[(s, d)] for s, d in matrix)
        assert P.shared_links(fab, paths) == {}, (seed, matrix)
        assert P.static_routes(fab, routes, matrix, core) == static   # deterministic


def test_static_without_matrix_is_destination_index_modulo_ports():
    fab = make_fabric("mpft", {"leaves": 4, "spines": 4, "hosts_per_leaf": 4, "planes": 1})
    routes = P.all_routes(fab)
    chosen = P.static_choices(fab, routes)
    for r in routes:
        if len(r.ports) > 1:
            assert chosen[(r.switch, r.ip)] == r.ports[P.destination_index(fab, r.ip) % len(r.ports)]
    # so the hosts of one leaf are reached over different spines: their downlinks never collide
    spines = {chosen[("pl0l0", n.ip)] for n in fab.nics() if n.host.startswith("g1h")}
    assert len(spines) == 4


def test_ecmp_like_placement_collides_where_static_does_not():
    """The matrix flows through the hash-free modulo placement share links; static does not."""
    fab = make_fabric("mpft", {"leaves": 8, "spines": 8, "hosts_per_leaf": 8, "planes": 1})
    routes = P.all_routes(fab)
    matrix = permutation(fab, 2)
    modulo = P.matrix_paths(fab, P.static_routes(fab, routes, []), matrix)
    assert P.shared_links(fab, modulo)
    static = P.matrix_paths(fab, P.static_routes(fab, routes, matrix), matrix)
    assert not P.shared_links(fab, static)


def test_static_survives_a_down_link():
    fab = make_fabric("mpft")
    l = next(l for l in fab.switch_links() if l.a == "pl0l0")
    down = frozenset({(l.a, l.a_port), (l.b, l.b_port)})
    routes = P.all_routes(fab, down)
    matrix = [("g0h0-n0", "g1h0-n0")]
    static = P.static_routes(fab, routes, matrix)
    hops = P.matrix_paths(fab, static, matrix)[("10.0.0.1", "10.0.1.1")]
    assert hops and (l.a, l.a_port) not in [(h.switch, h.out_port) for h in hops]


# ---- adaptive ---------------------------------------------------------------------------------

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
