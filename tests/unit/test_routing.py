import pytest

from testbed.core import errors
from testbed.emulation import trace
from testbed.emulation.net import hostnet
from testbed.model import make_fabric, policies
from testbed.model.paths import MAX_HOPS, Hop, LoopError, walk
from testbed.model.routing import ecmp_basis, routes_to, shortest_path_links


def routes(fab, nic, down=frozenset()):
    return {r.switch: r for r in routes_to(fab, nic.ip, nic.mac, fab.attachments(nic), down)}


def test_tors_holding_a_nic_deliver_it_and_others_use_ecmp():
    fab = make_fabric("hpn")
    nic = fab.nic("p0s0h0-n0")
    rs = routes(fab, nic)
    held = dict(fab.attachments(nic))
    for tor, port in held.items():
        assert rs[tor].ports == (port,) and rs[tor].deliver_mac == nic.mac
    assert all(rs[sw].deliver_mac is None for sw in rs if sw not in held)
    # every switch of the fabric can reach it
    assert set(rs) == set(fab.switches)


def test_dual_plane_aggregation_has_no_choice_toward_a_nic():
    fab = make_fabric("hpn")
    nic = fab.nic("p0s0h0-n0")
    for sw, r in routes(fab, nic).items():
        if fab.switches[sw].role == "agg" and fab.switches[sw].pod == 0:
            assert len(r.ports) == 1
    flat = make_fabric("hpn", {"dual_plane": False})
    aggs = [r for sw, r in routes(flat, flat.nic("p0s0h0-n0")).items()
            if flat.switches[sw].role == "agg" and flat.switches[sw].pod == 0]
    assert all(len(r.ports) == 2 for r in aggs)   # ECMP between the two ToRs of the pair


def test_a_down_attachment_is_withdrawn():
    fab = make_fabric("hpn")
    nic = fab.nic("p0s0h0-n0")
    (t0, p0), (t1, p1) = fab.attachments(nic)
    rs = routes(fab, nic, frozenset({(t0, p0)}))
    assert rs[t1].deliver_mac and not rs[t0].deliver_mac   # t0 now routes upward
    assert rs[t0].ports and p0 not in rs[t0].ports


def test_shortest_path_links_cross_the_top_tier():
    fab = make_fabric("clos3")
    links = shortest_path_links(fab, fab.nic("p0e0h0"), fab.nic("p1e0h0"))
    assert max(fab.switches[l.b].tier for l in links) == 3


def test_walk_ends_at_a_host_or_a_drop_and_stops_at_a_loop():
    fab = make_fabric("mpft")
    up = next(l for l in fab.switch_links() if (l.a, l.b) == ("pl0l0", "pl0s0"))
    host_port = fab.attachments(fab.nic("g0h1-n0"))[0][1]

    def bounce(sw, in_port):   # up to the spine, back down the same cable, out to a host
        if sw == "pl0s0":
            return up.b_port
        return up.a_port if in_port == 1 else host_port
    hops = walk(fab, ("pl0l0", 1), bounce)
    assert hops == [Hop("pl0l0", 1, up.a_port), Hop("pl0s0", up.b_port, up.b_port),
                    Hop("pl0l0", up.a_port, host_port)]
    assert walk(fab, ("pl0l0", 1), lambda sw, p: None) == [Hop("pl0l0", 1, None)]
    with pytest.raises(LoopError):
        walk(fab, ("pl0l0", 1), lambda sw, p: up.a_port if sw == "pl0l0" else up.b_port)


def test_trace_walks_what_the_switches_answer(monkeypatch):
    fab = make_fabric("mpft")
    fwd = policies.Forwarding(fab, policies.all_routes(fab))
    src, dst = fab.nic("g0h0-n0"), fab.nic("g1h1-n0")

    def ofproto_trace(switch, in_port, src, dst, *five_tuple):   # the routes' first choice
        return fwd.choices(switch, in_port, dst.ip)[0]
    monkeypatch.setattr(trace, "switch_out_port", ofproto_trace)
    expected = fwd.walk(*fwd.ingress(src), dst.ip, lambda sw, p, options: options[0])
    assert trace.trace(fab, {}, src, dst) == expected and len(expected) == 3
    up = next(l for l in fab.switch_links() if (l.a, l.b) == ("pl0l0", "pl0s0"))
    monkeypatch.setattr(trace, "switch_out_port", lambda sw, *rest: {"pl0l0": up.a_port,
                                                                     "pl0s0": up.b_port}[sw])
    with pytest.raises(errors.TestbedError, match=f"more than {MAX_HOPS} hops"):
        trace.trace(fab, {}, src, dst)


def test_ecmp_basis_modes():
    fab = make_fabric("clos3")
    sws = list(fab.switches.values())
    assert {ecmp_basis("polarized", s) for s in sws} == {0}
    assert len({ecmp_basis("seeded", s) for s in sws}) == len(sws)


def test_host_script_multipath_and_bonding():
    fab = make_fabric("hpn")
    host = fab.hosts["p0s0h0"]
    mp = hostnet.host_script(host, "multipath", "netdev")
    assert "nexthop via 10.255.255.254 dev p0s0h0-n0p0 onlink nexthop via" in mp
    assert "ethtool -K p0s0h0-n0p0 tx off" in mp
    assert "echo 1 > /proc/sys/net/ipv4/conf/all/ignore_routes_with_linkdown" in mp
    bond = hostnet.host_script(host, "bonding", "system")
    assert "type bond mode balance-xor xmit_hash_policy layer3+4" in bond
    assert "ethtool" not in bond
    assert "\nrule add from 10.1.0.1 table 101" in bond      # a line of its one `ip -batch`


def test_each_nic_has_an_interface_of_its_own_named_after_it():
    """On the multipath fallback a dual-ported NIC's address sits on a link of its own (dummy or
    ifb) named after the NIC, as on a bond, while its routes still go over its ports."""
    fab = make_fabric("hpn")
    host = fab.hosts["p0s0h0"]
    nic = host.nics[0]
    mp = hostnet.host_script(host, "multipath", "netdev", mtu=4096, nic_link="ifb").splitlines()
    assert f"link add p0s0h0-n0 address {nic.mac} mtu 4096 type ifb" in mp
    assert mp.index("link set dev p0s0h0-n0 up") < mp.index(f"addr add {nic.ip}/32 dev p0s0h0-n0")
    assert not [line for line in mp if "dev lo " in line and "addr" in line or " label " in line]
    assert "type dummy" in hostnet.host_script(host, "multipath", "netdev")   # the first tried
    route = next(line for line in mp if line.startswith(f"route add default table {hostnet.table(nic)} "))
    assert route.endswith("nexthop via 10.255.255.254 dev p0s0h0-n0p0 onlink "
                          "nexthop via 10.255.255.254 dev p0s0h0-n0p1 onlink")
    assert "echo 0 > /proc/sys/net/ipv4/conf/p0s0h0-n0/rp_filter" in mp
    bond = hostnet.host_script(host, "bonding", "system", nic_link="ifb")
    assert "type ifb" not in bond and f"addr add {nic.ip}/32 dev p0s0h0-n0" in bond
    assert {hostnet.nic_device(n) for n in host.nics} == {"p0s0h0-n0", "p0s0h0-n1"}
    single = make_fabric("hpn", {"single_tor": True}).hosts["p0s0h0"]
    assert hostnet.nic_device(single.nics[0]) == "p0s0h0-n0p0"
    assert "type dummy" not in hostnet.host_script(single, "multipath", "netdev")
    from testbed.model.families import FAMILIES
    big = FAMILIES["hpn"].make(dict(FAMILIES["hpn"].presets["segment"]))
    assert max(len(hostnet.nic_device(n)) for n in big.nics()) <= 15   # IFNAMSIZ: 11 here
