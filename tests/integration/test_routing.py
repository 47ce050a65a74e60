"""ECMP hash control, read back from the switches with traces (no traffic needed)."""
import re

import pytest

from testbed.emulation.trace import emulation_trace
from testbed.model.contract import PRIO_ROUTE, TABLE_FORWARD

pytestmark = pytest.mark.integration
TUPLES = 64


def tier_choices(emu, src, dst):
    """For each source port: (bucket index at the edge, bucket index at the aggregation switch)."""
    fab = emu.fabric
    choices = []
    for sport in range(40000, 40000 + TUPLES):
        hops = emulation_trace(emu, src, dst, sport=sport)
        assert len(hops) == 5 and hops[-1].out_port, hops   # edge, agg, core, agg, edge
        edge, agg = hops[0], hops[1]
        def uplinks(sw):
            return sorted(l.a_port for l in fab.switch_links() if l.a == sw)
        choices.append((uplinks(edge.switch).index(edge.out_port),
                        uplinks(agg.switch).index(agg.out_port)))
    return choices


@pytest.mark.parametrize("mode", ["polarized", "seeded"])
def test_polarized_hashing_repeats_the_first_tier_choice(up, mode):
    emu = up("clos3", routing={"ecmp": mode})
    fab = emu.fabric
    choices = tier_choices(emu, fab.nic("p0e0h0"), fab.nic("p1e0h0"))
    used = {c[0] for c in choices}
    assert used == {0, 1}, "the edge must hash the 5-tuples over both uplinks"
    same = sum(1 for a, b in choices if a == b)
    if mode == "polarized":
        # one basis everywhere: flows that share an uplink at tier 1 share one again at tier 2
        assert same == TUPLES
    else:
        # independent tiers agree about half the time; outside [16, 48] of 64 has p < 1e-4
        assert 16 <= same <= 48, f"{same}/{TUPLES} agreements"


# ---- HPN dual-plane: no choice at the aggregation tier, traffic stays in its plane ----------

PLANE_SPORTS = range(41000, 41032)
PLANE_PAIRS = [("p0s0h0-n0", "p0s0h1-n1"),    # same pod, across rails (ToR - agg - ToR)
               ("p0s0h0-n0", "p1s0h0-n0"),    # across pods, same rail
               ("p0s0h1-n1", "p1s0h0-n0"),    # across pods and rails
               ("p1s0h1-n0", "p0s0h0-n1")]


def own_pod_routes(emu, agg):
    """{NIC ip of the aggregation switch's own pod: the action of its /32 route}, read from OVS."""
    fab = emu.fabric
    pod = fab.switches[agg].pod
    ips = {n.ip for n in fab.nics() if fab.hosts[n.host].pod == pod}
    actions = {}
    for line in emu.ofctl("dump-flows", agg, f"table={TABLE_FORWARD}").splitlines():
        m = re.search(rf"priority={PRIO_ROUTE},ip,nw_dst=(\S+) actions=(\S+)", line)
        if m and m.group(1) in ips:
            actions[m.group(1)] = m.group(2)
    assert set(actions) == ips, f"{agg}: routes for {sorted(ips - set(actions))} missing"
    return actions


def groups_toward_tors(emu, agg):
    """Select groups of `agg` with a bucket that outputs to a ToR."""
    peer = emu.fabric.port_peer()
    found = []
    for line in emu.ofctl("dump-groups", agg).splitlines():
        if "type=select" in line:
            ports = [int(p) for p in re.findall(r"output:(\d+)", line)]
            if any(emu.fabric.switches.get(peer[(agg, p)][0]) and
                   emu.fabric.switches[peer[(agg, p)][0]].role == "tor" for p in ports):
                found.append(line.strip())
    return found


def test_dual_plane_keeps_traffic_in_its_plane_and_aggregation_has_no_choice(up):
    emu = up("hpn")
    fab = emu.fabric
    planes_started = set()
    for s, d in PLANE_PAIRS:
        src, dst = fab.nic(s), fab.nic(d)
        for sport in PLANE_SPORTS:
            hops = emulation_trace(emu, src, dst, sport=sport)
            assert hops[-1].out_port, f"{s} -> {d} sport {sport} dropped: {hops}"
            assert fab.port_peer()[(hops[-1].switch, hops[-1].out_port)][0] == dst.host
            plane = fab.switches[hops[0].switch].plane
            planes_started.add(plane)
            for hop in hops:
                sw = fab.switches[hop.switch]
                if sw.role in ("agg", "tor"):
                    assert sw.plane == plane, f"{s} -> {d} sport {sport} left plane {plane}: {hops}"
    assert planes_started == {0, 1}, "the hosts must spread 5-tuples over both planes"
    aggs = [sw for sw in fab.switches.values() if sw.role == "agg"]
    for agg in aggs:
        routes = own_pod_routes(emu, agg.name)
        assert all(a.startswith("output:") for a in routes.values()), (agg.name, routes)
        assert not groups_toward_tors(emu, agg.name), agg.name
    emu.stop()

    flat = up("hpn", dual_plane=False)
    try:   # stopped here: the fixture checks the first run's names only after every run is down
        with_choice = {}
        for agg in [sw for sw in flat.fabric.switches.values() if sw.role == "agg"]:
            routes = own_pod_routes(flat, agg.name)
            grouped = [ip for ip, a in routes.items() if a.startswith("group:")]
            if grouped and groups_toward_tors(flat, agg.name):
                with_choice[agg.name] = grouped
    finally:
        flat.stop()
    # without dual-plane an aggregation switch reaches both ToRs of a pair: ECMP toward every NIC
    assert len(with_choice) == len(aggs), with_choice
