"""Every family at its default size on real OVS with the real controller."""
import pytest

from testbed.core import sh
from testbed.measure import checks, wiring
from testbed.workload import traffic

pytestmark = pytest.mark.integration
FAMILIES = ["hpn", "mpft", "mrft", "clos3"]


def explain(emu, check):
    return f"{check.detail}\n{emu.controller_log()}\n{emu.dump_flows()}"


@pytest.mark.parametrize("family_up", FAMILIES, indirect=True)
def test_all_pairs_reachable(family_up):
    check = checks.reachability(family_up)
    assert check.passed, explain(family_up, check)
    if family_up.fabric.family in ("hpn", "mrft"):
        assert check.figures["cross_rail"] > 0   # these fabrics join rails above tier 1


@pytest.mark.parametrize("family_up", FAMILIES, indirect=True)
def test_the_wiring_check_finds_every_cable_where_the_blueprint_has_it(family_up):
    check = wiring.check(family_up)
    assert check.passed, check.detail
    assert check.figures["seen"] == check.figures["probes"] > 0


@pytest.mark.parametrize("family_up", ["mpft"], indirect=True)
def test_mpft_planes_are_isolated(family_up):
    emu = family_up
    a = emu.fabric.nic("g0h0-n0")
    b = emu.fabric.nic("g1h0-n1")           # another plane: no path in the model ...
    assert not emu.fabric.reachable(a, b)
    assert traffic.ping_all(emu, [(a, b)]) == {(a.ip, b.ip): False}   # ... and none on the wire


@pytest.mark.parametrize("family_up", ["hpn"], indirect=True)
def test_a_frame_of_the_fabrics_mtu_crosses_the_top_tier_and_a_byte_more_does_not_leave(family_up):
    emu = family_up
    src, dst = checks.farthest_pair(emu)

    def ping(size: int) -> str:     # don't fragment: the datagram goes whole or not at all
        return sh.node_cmd(emu.net[src.host], f"ping -n -c 1 -W 2 -M do -s {size} -I {src.ip} "
                                              f"{dst.ip} 2>&1 && echo PASSED || echo FAILED")
    whole = ping(emu.mtu - 28)      # IPv4 and ICMP headers: a packet of exactly the MTU
    assert "PASSED" in whole, whole
    over = ping(emu.mtu - 27)
    assert "FAILED" in over and "message too long" in over.lower(), over


@pytest.mark.parametrize("family_up", FAMILIES, indirect=True)
def test_tcp_across_top_tier_reaches_80_percent(family_up):
    check = checks.top_tier_tcp(family_up)
    assert check.passed, explain(family_up, check)


@pytest.mark.parametrize("family_up", ["hpn"], indirect=True)
def test_dual_ported_nic_spreads_flows_over_both_ports(family_up):
    emu = family_up
    check = checks.bond_spreading(emu)
    assert check.passed, explain(emu, check)
    assert len(check.figures["share"]) == 2


@pytest.mark.parametrize("family_up", ["hpn"], indirect=True)
def test_ping_while_a_flow_runs_in_the_background(family_up):
    """ping_all must not wait for a host's background iperf3 client to finish."""
    emu = family_up
    src, dst = emu.fabric.nic("p0s0h0-n0"), emu.fabric.nic("p0s0h1-n0")
    flow = traffic.Flow(src, dst, dport=5301)
    traffic.start_server(emu, dst, flow.dport)
    client = traffic.start_client(emu, flow, 30)
    try:
        assert all(traffic.ping_all(emu, [(src, dst)]).values())
        assert client.proc.poll() is None, "the client ended before the pings did"
    finally:
        traffic.stop_clients(emu, [client])
