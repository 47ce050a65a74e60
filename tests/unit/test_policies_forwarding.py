"""Routing policies: the forwarding state as a function (routes, core rules, walks)."""
from testbed.model import make_fabric
from testbed.model import policies as P
from testbed.model.routing import Route


def first(sw, in_port, options):
    return options[0]


def test_walk_follows_the_routes_to_the_delivering_switch():
    fab = make_fabric("mpft")
    fwd = P.Forwarding(fab, P.all_routes(fab))
    src, dst = fab.nic("g0h0-n0"), fab.nic("g1h1-n0")
    hops = fwd.walk(*fwd.ingress(src), dst.ip, first)
    assert [h.switch for h in hops] == ["pl0l0", "pl0s0", "pl0l1"]
    assert (hops[-1].switch, hops[-1].out_port) == fab.attachments(dst)[0]
    assert P.switch_links(hops, fwd) == [(h.switch, h.out_port) for h in hops[:2]]
    # plane 1's NIC is not reachable from plane 0: no route at the first switch
    assert fwd.walk(*fwd.ingress(src), fab.nic("g1h1-n1").ip, first) is None


def test_walk_is_none_on_a_loop_or_a_dead_end():
    fab = make_fabric("mpft")
    dst = fab.nic("g1h0-n0")
    up = next(l for l in fab.switch_links() if (l.a, l.b) == ("pl0l0", "pl0s0"))
    loop = [Route("pl0l0", dst.ip, (up.a_port,), None), Route("pl0s0", dst.ip, (up.b_port,), None)]
    fwd = P.Forwarding(fab, loop)
    assert fwd.walk("pl0l0", 1, dst.ip, first) is None
    dead_end = P.Forwarding(fab, loop[:1])          # the spine has no route
    assert dead_end.walk("pl0l0", 1, dst.ip, first) is None


def test_core_rules_override_the_route_for_their_in_port():
    fab = make_fabric("hpn")
    routes = P.all_routes(fab)
    rule = P.core_rules(fab, routes)[0]
    fwd = P.Forwarding(fab, routes, [rule])
    assert fwd.choices(rule.switch, rule.in_port, rule.ip) == (rule.port,)
    other = next(p for p in rule.fallback if p != rule.in_port)
    assert fwd.choices(rule.switch, other, rule.ip) == rule.fallback
