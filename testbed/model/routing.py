"""Pure route computation: which ports each switch uses toward a destination NIC.

The controller learns where a NIC is attached (switch, port) from its gratuitous ARPs; from
those attachments and the fabric it computes /32 host routes on every switch: the ToR that
heard the NIC delivers it, every other switch forwards on the ports that lie on shortest paths
(several ports = an ECMP select group). Nothing here touches a switch, so it is unit-testable.
"""
from __future__ import annotations

import zlib
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from testbed.model.fabric import Fabric, Link, Port


@dataclass(frozen=True)
class Route:
    """A /32 route on `switch` toward `ip`: its next-hop ports (more than one: an ECMP select
    group) and, on the last hop, the NIC's MAC to deliver to. A policy returns these."""
    switch: str
    ip: str
    ports: tuple[int, ...]   # next-hop ports; more than one means an ECMP select group
    deliver_mac: str | None  # set on the last hop: rewrite eth_dst to the NIC's MAC


def routes_to(fabric: Fabric, ip: str, mac: str, attachments: Iterable[Port],
              down: frozenset[Port] = frozenset()) -> list[Route]:
    """/32 routes toward `ip` on every switch that can reach one of its live attachments."""
    live = [a for a in attachments if a not in down]
    routes = []
    holding: dict[str, list[int]] = {}
    for switch, port in live:
        holding.setdefault(switch, []).append(port)
    for switch, ports in holding.items():
        routes.append(Route(switch, ip, tuple(sorted(ports)), mac))

    adj = fabric.adjacency()
    dist = {sw: 0 for sw in holding}
    queue = deque(holding)
    while queue:   # breadth-first from the ToRs that hold the NIC, over live links only
        sw = queue.popleft()
        for port, nbr, nbr_port in adj[sw]:
            if nbr not in dist and (sw, port) not in down and (nbr, nbr_port) not in down:
                dist[nbr] = dist[sw] + 1
                queue.append(nbr)
    for sw in sorted(dist):
        if dist[sw] == 0:
            continue
        ports = tuple(sorted(port for port, nbr, nbr_port in adj[sw]
                             if dist.get(nbr) == dist[sw] - 1
                             and (sw, port) not in down and (nbr, nbr_port) not in down))
        routes.append(Route(sw, ip, ports, None))
    return routes


# What an ECMP select group hashes. OVS hashes only the fields a packet has (a field whose
# prerequisites it does not meet is skipped): TCP's ports for TCP, UDP's for UDP (RoCE v2 is
# UDP to port 4791, its source port set per queue pair). Without the UDP ports every UDP flow
# between two NICs hashed alike (a three-tuple hash), whatever its source port.
FIVE_TUPLE = ("ip_src", "ip_dst", "nw_proto", "tcp_src", "tcp_dst", "udp_src", "udp_dst")
ECMP_MODES = ("polarized", "seeded")


def ecmp_basis(mode: str, switch) -> int:
    """The hash basis of a switch's select groups.

    polarized: one basis everywhere, as in a fabric built from one ASIC with one hash seed, so
    successive tiers make correlated choices. seeded: a basis per switch (from its DPID).
    """
    if mode == "polarized":
        return 0
    if mode == "seeded":
        return zlib.crc32(switch.dpid.to_bytes(8, "big"))
    raise ValueError(f"unknown ECMP mode {mode!r}; choose from {', '.join(ECMP_MODES)}")


def shortest_path_links(fabric: Fabric, src, dst) -> list[Link]:
    """Every Link (cable) on a shortest path from NIC `src` to NIC `dst` (host links included)."""
    routes = {r.switch: r for r in routes_to(fabric, dst.ip, dst.mac, fabric.attachments(dst))}
    by_port = {(l.b, l.b_port): l for l in fabric.links}
    by_port.update({(l.a, l.a_port): l for l in fabric.switch_links()})
    links = [by_port[a] for a in fabric.attachments(src)]
    frontier = {sw for sw, _ in fabric.attachments(src)}
    seen = set()
    while frontier:
        sw = frontier.pop()
        if sw in seen or sw not in routes:
            continue
        seen.add(sw)
        for port in routes[sw].ports:
            link = by_port[(sw, port)]
            links.append(link)
            if not routes[sw].deliver_mac:
                frontier.add(link.b if link.a == sw else link.a)
    return links
