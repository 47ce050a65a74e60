"""Routing policies: per-port core rules (claim C8)."""
from testbed.model import make_fabric
from testbed.model import policies as P


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
    routes = P.all_routes(fab)
    fwd = P.Forwarding(fab, routes, P.core_rules(fab, routes))
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
    ecmp = P.Forwarding(fab, routes)
    src, dst = fab.nic("p0s0h0-n0"), fab.nic("p1s0h0-n0")
    sw, port = fab.attachments(src)[0]
    planes = {fab.switches[h.switch].plane for hops in P.all_paths(ecmp, sw, port, dst.ip) for h in hops
              if fab.switches[h.switch].role == "agg"}
    assert planes == {0, 1}
