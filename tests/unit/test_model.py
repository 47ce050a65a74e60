import pytest

from testbed.core.errors import ParamError
from testbed.model import FAMILIES, make_fabric


@pytest.mark.parametrize("family", list(FAMILIES))
def test_defaults_build_and_names_fit(family):
    fab = make_fabric(family)
    assert fab.hosts and fab.switches
    dpids = [s.dpid for s in fab.switches.values()]
    assert len(set(dpids)) == len(dpids)
    ips = [n.ip for n in fab.nics()]
    assert len(set(ips)) == len(ips)
    for l in fab.links:
        assert len(l.a_intf) <= 15 and len(l.b_intf) <= 15


def test_hpn_dual_tor_each_nic_on_two_independent_tors():
    fab = make_fabric("hpn")
    for nic in fab.nics():
        (t1, _), (t2, _) = fab.attachments(nic)
        assert t1 != t2
        assert {fab.switches[t1].plane, fab.switches[t2].plane} == {0, 1}
    # rail-optimized: NIC i of every host of a segment shares its rail's ToR pair
    rail0 = {fab.attachments(n)[0][0] for n in fab.nics() if n.index == 0 and n.host.startswith("p0s0")}
    assert len(rail0) == 1


def test_hpn_dual_plane_tor_reaches_only_its_plane():
    fab = make_fabric("hpn")
    for l in fab.switch_links():
        a, b = fab.switches[l.a], fab.switches[l.b]
        if a.role == "tor":
            assert a.plane == b.plane
    flat = make_fabric("hpn", {"dual_plane": False})
    planes = {(flat.switches[l.a].plane, l.b) for l in flat.switch_links()
              if flat.switches[l.a].role == "tor"}
    assert len({p for p, _ in planes}) == 2 and len(planes) > len(flat.switch_links()) // 4


def test_hpn_core_oversubscription():
    fab = make_fabric("hpn")
    assert fab.summary()["tiers"]["agg"]["oversubscription"] == 15.0


def test_single_tor_baseline():
    fab = make_fabric("hpn", {"single_tor": True})
    assert all(len(n.ports) == 1 for n in fab.nics())


def test_mpft_nic_i_only_in_plane_i():
    fab = make_fabric("mpft")
    for nic in fab.nics():
        [(leaf, _)] = fab.attachments(nic)
        assert fab.switches[leaf].plane == nic.index
    a, b = fab.nic("g0h0-n0"), fab.nic("g1h0-n1")
    assert not fab.reachable(a, b)
    assert fab.reachable(a, fab.nic("g1h0-n0"))


def test_mrft_rails_share_spines():
    fab = make_fabric("mrft")
    assert fab.reachable(fab.nic("g0h0-n0"), fab.nic("g1h0-n1"))


def test_equal_cost_paths_clos3():
    fab = make_fabric("clos3")
    # edge -> 2 aggs -> 2 cores -> 2 aggs -> edge: 2 * 2 * 1 (each core reaches one agg per pod? no: both)
    a, b = fab.nic("p0e0h0"), fab.nic("p1e0h0")
    assert fab.equal_cost_paths(a, b) == 2 * 2 * 2
    assert fab.equal_cost_paths(a, fab.nic("p0e1h0")) == 2


@pytest.mark.parametrize("settings, words", [
    ({"tors": 3}, "even"),
    ({"rails": 3}, "more rails than a host has NICs"),
    ({"hosts": 0}, "hosts=0"),
    ({"radix": 3}, "radix=3"),
    ({"single_tor": True, "dual_plane": True}, "dual_plane"),
    ({"pods": 2, "cores": 0}, "cores=0"),
])
def test_bad_hpn_parameters_name_the_rule(settings, words):
    with pytest.raises(ParamError, match=words):
        make_fabric("hpn", settings)


def test_settings_from_strings_and_unknown_key():
    fab = make_fabric("hpn", ["hosts=3", "single_tor=true"])
    assert fab.params.hosts == 3 and fab.params.single_tor
    with pytest.raises(ParamError, match="unknown parameter"):
        make_fabric("hpn", ["bogus=1"])
    with pytest.raises(ParamError, match="expected int"):
        make_fabric("hpn", ["hosts=many"])
    with pytest.raises(ParamError, match="unknown family"):
        make_fabric("torus")


def test_host_link_by_port_name():
    fab = make_fabric("hpn")
    nic = fab.nic("p0s0h0-n1")
    link = fab.host_link(nic.ports[1])
    assert (link.a, link.a_intf) == (nic.host, nic.ports[1])
    assert (link.b, link.b_port) == fab.attachments(nic)[1]
    with pytest.raises(ParamError, match="no host port"):
        fab.host_link("p0e0-eth1")


def test_line_rate_of_a_nic_and_of_a_host():
    fab = make_fabric("hpn", {})
    p = fab.params
    nic = fab.nic("p0s0h0-n0")
    assert fab.line_mbit(nic) == pytest.approx(2 * p.host_gbps * p.scale)     # dual-ported
    assert fab.line_mbit("p0s0h0") == pytest.approx(p.nics * 2 * p.host_gbps * p.scale)
    single = make_fabric("hpn", {"single_tor": True})
    assert single.line_mbit("p0s0h0") == pytest.approx(p.nics * p.host_gbps * p.scale)


def test_emulated_switches_need_distinct_dpids():
    wide = {"planes": 1, "leaves": 1, "spines": 400, "radix": 1000}   # spine 256 = spine 0 in a byte
    with pytest.raises(ParamError, match="would share DPID"):
        make_fabric("mpft", wide)
    assert len(make_fabric("mpft", wide, emulated=False).switches) == 401
