"""Faults on a dual-ToR HPN: link failure with a measured failover gap, one-direction faults."""
import pytest

from testbed.core import sh
from testbed.core.wait import wait_for
from testbed.emulation.faults.inject import Faults
from testbed.emulation.net import hostnet
from testbed.measure.meters import GapProbe
from testbed.workload import traffic

pytestmark = [pytest.mark.integration, pytest.mark.hpn_fabric("hpn")]   # the plugin's fixtures
# Measured here on an idle machine: 36 ms, 1 of 3000 probes lost (the host side fails over at once
# on carrier loss; the reply path waits for the controller to withdraw the dead port's routes).
# Under a busy CPU (a VM lane beside it) we saw 117 ms, so the bound the test states is 250 ms.
FAILOVER_BOUND_MS = 250


def probe_port(emu, src, dst):
    """The port of `src` that carries ICMP to `dst` (the kernel's multipath choice)."""
    return emu.net[src.host].route_dev(src.ip, dst.ip, "icmp")


def linkdown(emu, nic) -> bool:
    """Whether a nexthop of the NIC's routing table is marked linkdown."""
    hops = emu.net[nic.host].table_nexthops(hostnet.table(nic))
    return any("linkdown" in flags for flags in hops.values())


def test_link_down_on_a_dual_ported_nic_fails_over_fast(hpn_fabric_module):
    emu = hpn_fabric_module
    src, dst = emu.fabric.nic("p0s0h0-n0"), emu.fabric.nic("p0s0h1-n0")
    link = emu.fabric.host_link(probe_port(emu, src, dst))
    with Faults(emu) as faults:
        probe = GapProbe(emu, src, dst, seconds=3.0)
        emu.net[src.host].cmd("sleep 1")          # the probe's steady state before the fault
        faults.link_down(link)
        during = probe.wait(timeout=20)
        assert during.received > 0
        assert during.longest_gap_ms < FAILOVER_BOUND_MS, during
        # still failed, on one port: steady (a busy CPU can cost the userspace datapath a probe)
        after = GapProbe(emu, src, dst, seconds=1.0).wait(timeout=20)
        assert after.lost <= 1, after
        # the switch saw it: OVS reports the ToR port down
        assert "LINK_DOWN" in emu.ofctl("dump-ports-desc", link.b)

    def recovered():   # the ToR port live, the controller's routes back, the host's nexthop usable
        return ("LINK_DOWN" not in emu.ofctl("dump-ports-desc", link.b, str(link.b_port))
                and (link.b, link.b_port) not in emu.status().down
                and not linkdown(emu, src))
    wait_for("the repaired link to be back in use", recovered, 10)
    repaired = GapProbe(emu, src, dst, seconds=1.0).wait(timeout=20)
    assert repaired.lost == 0, repaired
    print(f"failover gap {during.longest_gap_ms} ms, {during.lost} of {during.sent} probes lost")


def test_one_direction_fault_is_invisible_to_carrier_but_drops(hpn_fabric_module):
    emu = hpn_fabric_module
    fab = emu.fabric
    src = fab.nic("p0s0h0-n1")
    peers = [n for n in fab.nics() if n.host != src.host and fab.reachable(src, n)]
    link = emu.fabric.host_link(src.ports[0])
    assert all(traffic.ping_all(emu, [(src, p) for p in peers]).values())
    rx = f"/sys/class/net/{link.b_intf}/statistics/rx_packets"
    with Faults(emu) as faults:
        faults.one_way(link, "up")                # NIC port 0 -> ToR dropped; ToR -> NIC fine
        assert emu.net[src.host].cmd(f"cat /sys/class/net/{link.a_intf}/carrier").strip() == "1"
        assert "LINK_DOWN" not in emu.ofctl("dump-ports-desc", link.b, str(link.b_port))
        before = int(sh.run(["cat", rx]))
        results = traffic.ping_all(emu, [(src, p) for p in peers], count=2)
        # the host keeps hashing some flows onto the dead direction: those never arrive
        assert not all(results.values()), results
        assert any(results.values()), results     # the other port still works
        assert int(sh.run(["cat", rx])) == before
        # a Ctrl-C in the middle of a host command leaves the host's shell busy: the repair
        # on leaving the block must not need that shell
        emu.net[src.host].sendCmd("sleep 2")
    assert emu.net[src.host].waiting
    emu.net[src.host].waitOutput()
    assert all(traffic.ping_all(emu, [(src, p) for p in peers]).values())


def test_a_failed_tor_keeps_its_rules_until_it_is_back_and_traffic_moves_off_it(hpn_fabric_module):
    """Nothing reaches a ToR with every port down: the controller writes nothing to it (a
    segment's ToR would otherwise take a deletion per NIC at the failure and an addition per NIC
    at the repair); the NICs on it go on over their other ToR."""
    emu = hpn_fabric_module
    src, dst = emu.fabric.nic("p0s0h0-n0"), emu.fabric.nic("p0s0h1-n0")
    tor = emu.fabric.host_link(src.ports[0]).b
    held = emu.status().routes_per_switch[tor]
    with Faults(emu) as faults:
        faults.switch_down(tor)
        wait_for("the controller to see the ToR isolated", lambda: tor in emu.status().isolated, 10)
        wait_for("the controller to settle", lambda: emu.status().settled, 10)
        assert emu.status().routes_per_switch[tor] == held
        during = GapProbe(emu, src, dst, seconds=1.0).wait(timeout=20)
        assert during.lost <= 1, during
    wait_for("the ToR back in use", lambda: tor not in emu.status().isolated
             and not any(port[0] == tor for port in emu.status().down)
             and emu.routes_installed()
             and not linkdown(emu, src), 10)
    assert emu.status().routes_per_switch[tor] == held
    assert GapProbe(emu, src, dst, seconds=1.0).wait(timeout=20).lost == 0
