"""The bring-up checks behind `up --check` (run in order by bringup.py): reachability, a
top-tier TCP flow, bond spreading; the wiring check (wiring.py) builds on Check."""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from testbed.core import progress
from testbed.core.errors import PartLost, TestbedError
from testbed.emulation.build import Emulation
from testbed.model.routing import shortest_path_links
from testbed.workload import traffic

TCP_SECONDS = 3
TCP_BLOCK = 8192    # bytes per write/read: a 3 s test at ~1 Mbit/s measured in ~50 reads, not 3
MIN_RATE_FRACTION = 0.8
SPREAD_FLOWS = 8
ALL_PAIRS_UP_TO = 64      # NICs: up to this many, reachability pings every routed pair


@dataclass
class Check:
    name: str
    passed: bool
    detail: str
    figures: dict


def ping_pairs(fab, full: bool = False) -> list[tuple]:
    """The NIC pairs reachability pings: every routed pair of NICs on different hosts up to
    ALL_PAIRS_UP_TO NICs (or with `full`); above that a sample that grows with the fabric, not
    with its square: on each rail, every NIC pings the same-rail NIC of the next host (so every
    NIC sends and answers), and every pair of rails is crossed once where the fabric routes it.
    Every ToR port has already carried its NIC's announcement to the controller (readiness).
    The shell's pingall samples otherwise, on purpose (testbed.cli.shell.mininet.pingall_pairs)."""
    nics = fab.nics()
    if full or len(nics) <= ALL_PAIRS_UP_TO:
        return fab.routed_pairs()
    by_rail: dict[int, list] = {}
    for nic in nics:
        by_rail.setdefault(nic.rail, []).append(nic)
    pairs = []
    for ring in by_rail.values():
        pairs += [(a, b) for a, b in zip(ring, ring[1:] + ring[:1])
                  if a.host != b.host and fab.reachable(a, b)]
    for r1, r2 in itertools.permutations(by_rail, 2):
        a = by_rail[r1][0]
        b = next((b for b in by_rail[r2] if b.host != a.host and fab.reachable(a, b)), None)
        if b is not None:
            pairs.append((a, b))
    return pairs


def reachability(emu: Emulation, full: bool = False) -> Check:
    fab = emu.fabric
    pairs = ping_pairs(fab, full)
    results = traffic.ping_all(emu, pairs)
    failed = [k for k, ok in results.items() if not ok]
    if failed:   # a first ARP for the gateway can cost one ping: retry the failures once
        results.update(traffic.ping_all(emu, [(fab.nic(s), fab.nic(d)) for s, d in failed], count=2))
        failed = [k for k, ok in results.items() if not ok]
    cross_rail = sum(1 for a, b in pairs if a.rail != b.rail)
    return Check("reachability", not failed and len(results) == len(pairs),
                 f"{len(pairs) - len(failed)}/{len(pairs)} NIC pairs answer ping "
                 f"({cross_rail} of them cross-rail)" + (f"; failed: {failed[:5]}" if failed else ""),
                 {"pairs": len(pairs), "failed": len(failed), "cross_rail": cross_rail})


def farthest_pair(emu: Emulation):
    """A NIC pair whose path climbs highest (crosses the top tier), from the first NIC: every
    family is symmetric enough that some destination of NIC 0 reaches the top."""
    fab = emu.fabric
    src, *others = fab.nics()

    def height(dst):
        return max(fab.switches[l.b].tier for l in shortest_path_links(fab, src, dst))
    return src, max((d for d in others if d.host != src.host and fab.reachable(src, d)), key=height)


def top_tier_tcp(emu: Emulation) -> Check:
    src, dst = farthest_pair(emu)
    links = shortest_path_links(emu.fabric, src, dst)
    # one TCP flow takes one path; its ceiling is the slowest link on it (the same on every path)
    ceiling = min(emu.fabric.link_mbit(l) for l in links)
    # the steady state, not slow start: what the receiver got after the first second
    [result] = traffic.run_flows(emu, [traffic.Flow(src, dst)], TCP_SECONDS, server_output=True,
                                 block=TCP_BLOCK)
    got = traffic.received_mbps(result, warm=1.0)
    top = max(emu.fabric.switches[l.b].tier for l in links)
    return Check("top-tier TCP", got >= MIN_RATE_FRACTION * ceiling,
                 f"{src.ip} -> {dst.ip} over tier {top}: {got:.2f} of {ceiling:.2f} Mbit/s "
                 f"({got / ceiling:.0%}, need {MIN_RATE_FRACTION:.0%})",
                 {"mbps": got, "ceiling_mbps": ceiling, "src": src.ip, "dst": dst.ip})


def bond_spreading(emu: Emulation) -> Check | None:
    fab = emu.fabric
    dual = [n for n in fab.nics() if len(n.ports) > 1]
    if not dual:
        return None
    src = dual[0]
    dst = next(n for n in fab.nics() if n.host != src.host and fab.reachable(src, n))
    # consecutive source ports that the host's own hash sends out of every port: with ports left
    # to chance, all SPREAD_FLOWS would hash onto one port once in 2^(SPREAD_FLOWS-1) runs
    sport = spread_sport(emu, src, dst)
    before = traffic.port_tx_bytes(emu, src.host, src.ports)
    traffic.run_flows(emu, [traffic.Flow(src, dst, sport=sport, parallel=SPREAD_FLOWS)], 2)
    after = traffic.port_tx_bytes(emu, src.host, src.ports)
    sent = {p: after[p] - before[p] for p in src.ports}
    total = sum(sent.values()) or 1
    share = {p: round(b / total, 3) for p, b in sent.items()}
    # each port must carry at least one flow's worth of a fair split
    passed = all(s >= 0.5 / SPREAD_FLOWS for s in share.values())
    return Check("bond spreading", passed,
                 f"{SPREAD_FLOWS} flows from {src.name}: " +
                 ", ".join(f"{p} {s:.0%}" for p, s in share.items()) + f" ({emu.bond})",
                 {"share": share, "backend": emu.bond})


def spread_sport(emu: Emulation, src, dst, dport: int = 5201, first: int = 40000) -> int | None:
    """The first of SPREAD_FLOWS consecutive TCP source ports from `first` on that the kernel
    sends out of every port of `src` (asked with `route_devs`), or None if no such run is found
    within 64 tries (then iperf3 picks the ports)."""
    host = emu.net[src.host]
    for start in range(first, first + 64 * SPREAD_FLOWS, SPREAD_FLOWS):
        devs = host.route_devs(src.ip, dst.ip, "tcp", list(range(start, start + SPREAD_FLOWS)), dport)
        if set(src.ports) <= set(devs):
            return start
    return None


def guarded(name: str, check, emu: Emulation) -> Check | None:
    """A check whose traffic could not run (e.g. iperf3 found no path on a miswired fabric) has
    failed; it does not end the run. A lost part of the fabric still does (PartLost)."""
    try:
        with progress.phase(name):
            return check(emu)
    except PartLost:
        raise
    except TestbedError as e:
        return Check(name, False, f"could not run: {str(e).splitlines()[0]}", {"error": str(e)})
