"""The kernel paths (OVS kernel datapath, Linux bonding, netem), run in the full-kernel lane.

On a kernel without the modules these run inside tests/vm/run-lane. They fail, not skip, if the
testbed silently fell back to its userspace paths.
"""
import re

import pytest

from testbed import checks, system, traffic
from testbed.build import Emulation
from testbed.topo import make_fabric

pytestmark = pytest.mark.fullkernel


def test_doctor_reports_the_kernel_paths():
    assert system.datapath() == "system"
    assert system.bond_backend() == "bonding"
    assert system.features()["netem"]


@pytest.fixture(scope="module")
def hpn():
    with Emulation(make_fabric("hpn")) as emu:
        yield emu


def bond_info(emu, nic):
    return emu.net[nic.host].cmd(f"cat /proc/net/bonding/{nic.host}-n{nic.index}")


def test_hpn_comes_up_on_the_kernel_datapath_with_linux_bonds(hpn):
    assert hpn.datapath == "system" and hpn.bond == "bonding"
    nic = hpn.fabric.nic("p0s0h0-n0")
    info = bond_info(hpn, nic)
    assert "Bonding Mode: load balancing (xor)" in info, info
    assert "Transmit Hash Policy: layer3+4" in info, info
    assert info.count("MII Status: up") == 3, info          # the bond and both its ports
    check = checks.reachability(hpn)
    assert check.passed, check.detail


def test_dual_tor_link_failure_fails_over_through_the_bonding_driver(hpn):
    fab = hpn.fabric
    nic = fab.nic("p0s0h0-n0")
    peers = [n for n in fab.nics() if n.host != nic.host and fab.reachable(nic, n)]
    link = next(l for l in fab.host_links() if l.a_intf == nic.ports[0])
    hpn.net[link.b].cmd(f"ip link set {link.b_intf} down")    # the ToR side of port 0
    try:
        def port0_down():
            return re.search(rf"Slave Interface: {nic.ports[0]}\s+MII Status: down", bond_info(hpn, nic))
        from testbed.build import wait_for
        wait_for("the bond to see port 0 down", port0_down, 10)
        results = traffic.ping_all(hpn, [(nic, p) for p in peers], count=3)
        assert all(results.values()), results
    finally:
        hpn.net[link.b].cmd(f"ip link set {link.b_intf} up")
