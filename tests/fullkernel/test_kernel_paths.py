"""The kernel paths (OVS kernel datapath, Linux bonding, netem), run in the full-kernel lane.

On a kernel without the modules these run inside tests/vm/run-lane. They fail, not skip, if the
testbed silently fell back to its userspace paths.
"""
import os
import re

import pytest

from testbed.core import sh
from testbed.core.wait import wait_for
from testbed.emulation.build import Emulation
from testbed.emulation.detectors import Detectors
from testbed.emulation.faults.inject import Faults
from testbed.emulation.net import system
from testbed.emulation.net.shaping import shaping_lines
from testbed.measure import checks
from testbed.model import make_fabric
from testbed.workload import traffic

pytestmark = pytest.mark.fullkernel


def test_doctor_reports_the_kernel_paths():
    assert system.datapath() == "system"
    assert system.bond_backend() == "bonding"
    assert system.features()["netem"]


@pytest.fixture(scope="module")
def hpn():
    """The default HPN, on the kernel paths or not at all (checked before the ~1 min bring-up)."""
    emu = Emulation(make_fabric("hpn"))
    assert (emu.datapath, emu.bond) == ("system", "bonding"), (
        f"fell back to datapath={emu.datapath}, bond={emu.bond} "
        f"(HPN_DATAPATH={os.environ.get('HPN_DATAPATH')}, HPN_BOND={os.environ.get('HPN_BOND')}, "
        f"features={system.features()})")
    with emu:
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


NETEM_MS = 50


def ping_rtt(emu, src, dst, ident: int, count: int = 5) -> tuple[float, float]:
    """(min, avg) RTT in ms of `count` pings from NIC src to NIC dst. A fixed ICMP identifier
    keeps every run the same flow, so the bond's layer3+4 hash sends it out of the same port."""
    out = sh.node_cmd(emu.net[src.host],
                      f"ping -n -q -c {count} -i 0.2 -W 3 -e {ident} -I {src.ip} {dst.ip}")
    m = re.search(r"= ([\d.]+)/([\d.]+)/", out)
    assert m, out
    return float(m.group(1)), float(m.group(2))


def tx_packets(emu, host: str, ports) -> dict[str, int]:
    return {p: int(emu.net[host].cmd(f"cat /sys/class/net/{p}/statistics/tx_packets")) for p in ports}


def test_netem_delay_on_one_link_shows_in_the_rtt(hpn):
    """Replace the bfifo leaf (handle 10: under HTB class 5:1, see shaping.shaping_lines) of the
    one host port a ping flow leaves by with netem, and see the delay in that flow's RTT.
    `tc qdisc replace ... handle 10: netem` would fail (a qdisc's kind cannot change under the
    same handle): delete, then add; sh.node_cmd raises if either fails."""
    fab = hpn.fabric
    src, dst = fab.nic("p0s0h0-n0"), fab.nic("p1s0h1-n0")
    ident = 4242
    before = tx_packets(hpn, src.host, src.ports)
    _, base = ping_rtt(hpn, src, dst, ident)
    after = tx_packets(hpn, src.host, src.ports)
    port = max(src.ports, key=lambda p: after[p] - before[p])     # the bond port this flow uses
    assert after[port] - before[port] >= 5, (
        f"the ping flow (ICMP id {ident}) did not keep to one bond port, is the bond hashing per "
        f"flow? tx packets before {before}, after {after}")
    link = fab.host_link(port)
    bfifo = shaping_lines(port, link.gbps * fab.params.scale, hpn.options.queue_bytes)[2]
    node = hpn.net[src.host]
    sh.node_cmd(node, f"tc qdisc del dev {port} parent 5:1 handle 10:\n"
                      f"tc qdisc add dev {port} parent 5:1 handle 10: netem delay {NETEM_MS}ms")
    try:
        shown = sh.node_cmd(node, f"tc qdisc show dev {port}")
        assert "qdisc netem 10: parent 5:1" in shown and f"delay {NETEM_MS}ms" in shown, shown
        low, avg = ping_rtt(hpn, src, dst, ident)
        assert low >= NETEM_MS, f"min RTT {low} ms with {NETEM_MS} ms netem on {port} (base {base} ms)"
        assert avg < base + NETEM_MS + 100, f"avg RTT {avg} ms, base {base} ms: delayed more than once?"
    finally:
        sh.node_cmd(node, f"tc qdisc del dev {port} parent 5:1 handle 10:\ntc {bfifo}")
    shown = sh.node_cmd(node, f"tc qdisc show dev {port}")
    assert "qdisc bfifo 10: parent 5:1" in shown, shown
    _, avg = ping_rtt(hpn, src, dst, ident, count=3)
    assert avg < NETEM_MS, f"avg RTT {avg} ms after netem was removed from {port}"


def test_dual_tor_link_failure_fails_over_through_the_bonding_driver(hpn):
    fab = hpn.fabric
    nic = fab.nic("p0s0h0-n0")
    peers = [n for n in fab.nics() if n.host != nic.host and fab.reachable(nic, n)]
    link = fab.host_link(nic.ports[0])
    hpn.net[link.b].cmd(f"ip link set {link.b_intf} down")    # the ToR side of port 0
    try:
        def port0_down():
            return re.search(rf"Slave Interface: {nic.ports[0]}\s+MII Status: down", bond_info(hpn, nic))
        wait_for("the bond to see port 0 down", port0_down, 10)
        results = traffic.ping_all(hpn, [(nic, p) for p in peers], count=3)
        assert all(results.values()), results
    finally:
        hpn.net[link.b].cmd(f"ip link set {link.b_intf} up")


def bond_slaves(emu, nic) -> list[str]:
    return emu.net[nic.host].cmd(f"cat /sys/class/net/{nic.host}-n{nic.index}/bonding/slaves").split()


def test_detector_takes_a_silent_port_out_of_the_linux_bond_and_back(hpn):
    """Claim C4 on the bonding backend: a one-direction fault leaves carrier up, so only the
    probe detector can see it; it releases the port from the bond and re-enslaves it on repair.
    Probes every 100 ms, dead after 2 s: under the lane's emulated CPU the controller's answers
    to the probes took over 0.5 s at times (a healthy port was taken out at 0.5 s)."""
    fab = hpn.fabric
    nic = fab.nic("p0s0h0-n1")
    port = nic.ports[0]
    peers = [n for n in fab.nics() if n.host != nic.host and fab.reachable(nic, n)]
    with Detectors(hpn, [nic.host], interval=0.1, dead_after=2.0) as detectors:
        assert sorted(bond_slaves(hpn, nic)) == sorted(nic.ports)
        with Faults(hpn) as faults:
            faults.one_way(fab.host_link(port), "up")      # NIC port 0 -> ToR dropped
            assert hpn.net[nic.host].cmd(f"cat /sys/class/net/{port}/carrier").strip() == "1"
            wait_for("the detector to release the port from the bond",
                     lambda: bond_slaves(hpn, nic) == [nic.ports[1]], 10)
            wait_for("pings from the NIC to every peer", lambda: all(
                traffic.ping_all(hpn, [(nic, p) for p in peers]).values()), 15, 0.1)
        wait_for("the detector to put the port back in the bond",
                 lambda: sorted(bond_slaves(hpn, nic)) == sorted(nic.ports), 10)
        events = detectors.events(nic.host)
        downs = [e["port"] for e in events if e["event"] == "down"]
        assert downs == [port], "\n".join(map(str, events))   # no other port was ever taken out
    assert sorted(bond_slaves(hpn, nic)) == sorted(nic.ports)
    assert re.search(rf"Slave Interface: {port}\s+MII Status: up", bond_info(hpn, nic))


SEND_AND_COUNT = """
import socket, sys, time
src, dst, ports = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
def tx():
    return {p: int(open(f"/sys/class/net/{p}/statistics/tx_packets").read()) for p in ports}
for sport in map(int, sys.argv[4:]):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src, sport))
    before = tx()
    for _ in range(50):
        s.sendto(b"x" * 200, (dst, 9))
    deadline = time.monotonic() + 10
    while True:   # a shaping qdisc may send some of them later, from another CPU
        after = tx()
        moved = {p: after[p] - before[p] for p in ports}
        if max(moved.values()) >= 50 or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    print(sport, max(ports, key=moved.get) if max(moved.values()) >= 50 else "unsent")
"""


def test_route_dev_names_the_slave_the_linux_bond_hashes_a_flow_onto(hpn):
    """`ip route get` names only the bond: route_devs computes the slave from the kernel's
    layer3+4 hash. Each prediction is checked against the slave whose counters moved."""
    src, dst = hpn.fabric.nic("p0s0h0-n0"), hpn.fabric.nic("p0s0h1-n0")
    sports = list(range(41000, 41016))
    predicted = hpn.net[src.host].route_devs(src.ip, dst.ip, "udp", sports, 9)
    assert set(predicted) == set(src.ports), predicted          # both slaves get flows
    out = hpn.net[src.host].cmd(f"python3 -c '{SEND_AND_COUNT}' {src.ip} {dst.ip} "
                                f"{','.join(src.ports)} {' '.join(map(str, sports))}")
    seen = dict(re.findall(r"(\d+) (\S+-n0p\d)", out))      # Mininet echoes "> " prompts first
    assert [seen.get(str(s)) for s in sports] == predicted, out
