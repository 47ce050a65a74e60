"""Routing policies on running fabrics, read back from the switches with traces.

- per-port core (HPN, claim C8): a pod-to-pod 5-tuple leaves the core on the port the model
  pairs with its in-port, moves off it while that port is down and comes back when it returns;
- static per destination (DeepSeek Fig. 8, C12): the flows of the known matrix share no link;
- adaptive: two TCP flows that ECMP hashes onto one uplink are separated by the controller within
  a stated bound, and together they carry more than on ECMP.
"""
import re
import time

import pytest

from testbed.core import sh
from testbed.core.wait import wait_for
from testbed.emulation.trace import emulation_trace
from testbed.model.contract import PRIO_ROUTE, TABLE_FORWARD
from testbed.model.policies import core_pairing
from testbed.workload import traffic

pytestmark = pytest.mark.integration

MOVE_TIMEOUT_S = 15       # port status + recompute; generous for a machine shared with a VM


def switch_links(emu, hops):
    """The directed switch-to-switch links of a trace."""
    peer, switches = emu.fabric.port_peer(), emu.fabric.switches
    return [(h.switch, h.out_port) for h in hops
            if h.out_port and peer[(h.switch, h.out_port)][0] in switches]


def core_hop(emu, hops):
    [hop] = [h for h in hops if emu.fabric.switches[h.switch].role == "core"]
    return hop


# ---- per-port core -----------------------------------------------------------------------------

def test_core_pins_pod_traffic_to_the_paired_port_and_fails_over(up):
    emu = up("hpn")
    fab = emu.fabric
    assert emu.status().policy["core"] == "per-port"
    assert emu.status().core_rules > 0
    src, dst = fab.nic("p0s0h0-n0"), fab.nic("p1s0h1-n1")
    dst_pod = fab.hosts[dst.host].pod
    pairing = core_pairing(fab)
    peer = fab.port_peer()

    # every 5-tuple leaves the core on the port paired with the one it came in on: same plane
    # and number in the destination pod, whatever the hash would have said
    for sport in range(42000, 42016):
        hops = emulation_trace(emu, src, dst, sport=sport)
        hop = core_hop(emu, hops)
        assert hop.out_port == pairing[(hop.switch, hop.in_port, dst_pod)], hops
        came, went = fab.switches[peer[(hop.switch, hop.in_port)][0]], \
            fab.switches[peer[(hop.switch, hop.out_port)][0]]
        assert (came.plane, came.coords[2]) == (went.plane, went.coords[2]) and went.pod == dst_pod

    sport = 42000
    hop = core_hop(emu, emulation_trace(emu, src, dst, sport=sport))
    core, j = hop.switch, hop.out_port
    veth = f"{core}-eth{j}"

    def core_port():
        hops = emulation_trace(emu, src, dst, sport=sport)
        return core_hop(emu, hops).out_port if hops[-1].out_port else None

    try:
        t0 = time.monotonic()
        sh.run(["ip", "link", "set", veth, "down"])
        moved = wait_for(f"{src.ip} -> {dst.ip} to leave {core} port {j}",
                         lambda: (p := core_port()) not in (None, j) and p, MOVE_TIMEOUT_S)
        t_moved = time.monotonic() - t0
        wait_for("the controller to see the port down",
                 lambda: (core, j) in emu.status().down, MOVE_TIMEOUT_S)
        assert fab.switches[peer[(core, moved)][0]].pod == dst_pod
        assert core_port() == moved   # stays on the fallback while j is down

        t0 = time.monotonic()
        sh.run(["ip", "link", "set", veth, "up"])
        wait_for(f"{src.ip} -> {dst.ip} to return to {core} port {j}",
                 lambda: core_port() == j, MOVE_TIMEOUT_S)
        t_back = time.monotonic() - t0
    finally:
        sh.run(["ip", "link", "set", veth, "up"], check=False)
    print(f"per-port core: {core} port {j}; moved to {moved} {t_moved:.2f} s after down, "
          f"back {t_back:.2f} s after up")


# ---- static per destination -----------------------------------------------------------------

STATIC_MATRIX = [("g0h0-n0", "g1h0-n0"), ("g0h1-n0", "g1h1-n0"),
                 ("g1h0-n0", "g0h1-n0"), ("g1h1-n0", "g0h0-n0")]


def test_static_routes_keep_the_matrix_flows_apart(up):
    emu = up("mpft", routing={"policy": "static", "matrix": [list(p) for p in STATIC_MATRIX]})
    fab = emu.fabric
    users = {}
    for s, d in STATIC_MATRIX:
        src, dst = fab.nic(s), fab.nic(d)
        paths = {tuple(emulation_trace(emu, src, dst, sport=sport)) for sport in range(43000, 43008)}
        assert len(paths) == 1, f"{s} -> {d}: static routing must not depend on the 5-tuple"
        [hops] = paths
        assert hops[-1].out_port
        for link in switch_links(emu, hops):
            users.setdefault(link, []).append((s, d))
    shared = {l: u for l, u in users.items() if len(u) > 1}
    assert not shared, f"links shared by flows of the matrix: {shared}"
    for sw in fab.switches:   # no select group is used by any route
        assert not re.search(rf"priority={PRIO_ROUTE},.*actions=group:",
                             emu.ofctl("dump-flows", sw, f"table={TABLE_FORWARD}"))


# ---- adaptive ---------------------------------------------------------------------------------

ADAPTIVE_SETTINGS = {"scale": 0.025}     # 400G -> 10 Mbit/s: two flows stay far from the CPU limit
FLOW_SECONDS = 12
SEPARATE_WITHIN_S = 8.0                  # from the clients' start: a few 0.5 s polls, with margin
MIN_GAIN = 1.3                           # aggregate adaptive / aggregate ECMP


def colliding_flows(emu):
    """Two flows from different hosts on one leaf to two hosts of another leaf whose 5-tuples the
    first leaf hashes onto the same uplink (found with traces)."""
    fab = emu.fabric
    a_src, a_dst = fab.nic("g0h0-n0"), fab.nic("g1h0-n0")
    b_src, b_dst = fab.nic("g0h1-n0"), fab.nic("g1h1-n0")
    first = {}
    for sport in range(44000, 44016):
        first[("a", sport)] = emulation_trace(emu, a_src, a_dst, sport=sport, dport=5201)[0].out_port
        first[("b", sport)] = emulation_trace(emu, b_src, b_dst, sport=sport + 100, dport=5202)[0].out_port
    for sa in range(44000, 44016):
        for sb in range(44000, 44016):
            if first[("a", sa)] == first[("b", sb)]:
                return [traffic.Flow(a_src, a_dst, dport=5201, sport=sa),
                        traffic.Flow(b_src, b_dst, dport=5202, sport=sb + 100)]
    raise AssertionError("no two 5-tuples share an uplink: ECMP hashing looks broken")


def flow_links(emu, flow):
    return set(switch_links(emu, emulation_trace(emu, flow.src, flow.dst, sport=flow.sport,
                                                  dport=flow.dport)))


def run_pair(emu, flows, watch=False):
    """Run both flows for FLOW_SECONDS; (aggregate Mbit/s, seconds until their paths were
    disjoint or None)."""
    for f in flows:
        traffic.start_server(emu, f.dst, f.dport)
    t0 = time.monotonic()
    clients = [traffic.start_client(emu, f, FLOW_SECONDS) for f in flows]
    separated = None
    try:
        while watch and separated is None and time.monotonic() - t0 < FLOW_SECONDS:
            if not flow_links(emu, flows[0]) & flow_links(emu, flows[1]):
                separated = time.monotonic() - t0
            else:
                time.sleep(0.2)   # pacing of the trace poll; the condition is what we wait for
        results = [traffic.wait_client(emu, c, FLOW_SECONDS + 20) for c in clients]
    finally:
        traffic.stop_clients(emu, clients)
    return sum(traffic.received_mbps(r) for r in results), separated


def test_adaptive_separates_flows_ecmp_collides(up):
    ecmp = up("mpft", **ADAPTIVE_SETTINGS)
    try:
        flows = colliding_flows(ecmp)
        shared = flow_links(ecmp, flows[0]) & flow_links(ecmp, flows[1])
        assert shared, "the chosen 5-tuples must share an uplink under ECMP"
        ecmp_total, _ = run_pair(ecmp, flows)
        # ECMP keeps them together for the whole run
        assert flow_links(ecmp, flows[0]) & flow_links(ecmp, flows[1])
    finally:
        ecmp.stop()   # one fabric at a time: the adaptive one has the same names

    emu = up("mpft", routing={"policy": "adaptive"}, **ADAPTIVE_SETTINGS)
    try:
        # same switches, same hash bases: the same 5-tuples collide here before the controller acts
        assert flow_links(emu, flows[0]) & flow_links(emu, flows[1]) == shared
        total, separated = run_pair(emu, flows, watch=True)
        moves = emu.status().tracker["moves"]
        rate = min(l.gbps for l in emu.fabric.switch_links()) * emu.fabric.params.scale
    finally:
        emu.stop()   # here, so that the fixture finds both runs down whatever happened
    print(f"adaptive: separated after {separated} s; aggregate {total:.2f} Mbit/s vs ECMP "
          f"{ecmp_total:.2f} Mbit/s (x{total / ecmp_total:.2f}; uplink {rate:.1f} Mbit/s); moves {moves}")
    assert separated is not None and separated <= SEPARATE_WITHIN_S, \
        f"flows still share a link {SEPARATE_WITHIN_S} s after they started; moves: {moves}"
    assert moves and {tuple(m["from"]) for m in moves} & shared
    assert total >= MIN_GAIN * ecmp_total, f"adaptive {total:.2f} vs ECMP {ecmp_total:.2f} Mbit/s"
