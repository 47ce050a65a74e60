from testbed.emulation import hostnet
from testbed.model import make_fabric
from testbed.model.routing import ecmp_basis, path_links, routes_to


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


def test_path_links_cross_the_top_tier():
    fab = make_fabric("clos3")
    links = path_links(fab, fab.nic("p0e0h0"), fab.nic("p1e0h0"))
    assert max(fab.switches[l.b].tier for l in links) == 3


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
    assert "ignore_routes_with_linkdown=1" in mp
    bond = hostnet.host_script(host, "bonding", "system")
    assert "type bond mode balance-xor xmit_hash_policy layer3+4" in bond
    assert "ethtool" not in bond
    assert "ip rule add from 10.1.0.1 table 101" in bond
