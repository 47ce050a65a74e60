"""The cabling as built vs the blueprint: miswiring on purpose, and naming what is miswired.

A blueprint is the model's cables (Fabric.links). `miswire` swaps the cables of pairs of switch
ports (`SWITCH-ethN`, both of one tier), the way an early HPN build was wrongly cabled: the two
far ends trade places. The wiring check (testbed/measure/wiring.py) sends a probe into every
cable end and sees where it comes out; `wrong_cables` compares those sightings with the
blueprint and names each cable that is not where the blueprint has it. All pure.
"""
from __future__ import annotations

import dataclasses
import re

from testbed.core.errors import ParamError
from testbed.model.fabric import Fabric, Link

End = tuple[str, int | str]     # (switch, OpenFlow port) or (host, its port's interface name)


def parse_port(fabric: Fabric, text: str) -> tuple[str, int]:
    m = re.fullmatch(r"(\S+)-eth(\d+)", text.strip())
    if not m or m.group(1) not in fabric.switches:
        raise ParamError(f"--miswire: {text!r} is not a switch port of this {fabric.family} fabric "
                         "(SWITCH-ethN)")
    switch, port = m.group(1), int(m.group(2))
    if not 1 <= port <= fabric.ports_of(switch):
        raise ParamError(f"--miswire: {switch} has ports 1-{fabric.ports_of(switch)}, not {port}")
    return switch, port


def parse_swaps(fabric: Fabric, pairs: list[str]) -> list[tuple[tuple[str, int], tuple[str, int]]]:
    """`A,B` strings -> pairs of switch ports, checked: two ports of one tier, on two cables,
    each port in at most one swap."""
    swaps, used = [], set()
    for pair in pairs:
        parts = pair.split(",")
        if len(parts) != 2:
            raise ParamError(f"--miswire {pair!r}: expected PORT_A,PORT_B (SWITCH-ethN,SWITCH-ethM)")
        a, b = (parse_port(fabric, p) for p in parts)
        if fabric.switches[a[0]].tier != fabric.switches[b[0]].tier:
            raise ParamError(f"--miswire {pair}: {a[0]} and {b[0]} are not of one switch tier")
        if a == b or cable_at(fabric, a) is cable_at(fabric, b):
            raise ParamError(f"--miswire {pair}: the two ports must be on two different cables")
        if {a, b} & used:
            raise ParamError(f"--miswire {pair}: a port may be in one swap only")
        used |= {a, b}
        swaps.append((a, b))
    return swaps


def cable_at(fabric: Fabric, port: tuple[str, int]) -> Link:
    for link in fabric.links:
        if (link.b, link.b_port) == port or (link.a in fabric.switches and (link.a, link.a_port) == port):
            return link
    raise ParamError(f"--miswire: {port[0]}-eth{port[1]} is not cabled")


def ends(fabric: Fabric, link: Link) -> tuple[End, End]:
    a = (link.a, link.a_port) if link.a in fabric.switches else (link.a, link.a_intf)
    return a, (link.b, link.b_port)


def miswire(fabric: Fabric, swaps) -> list[tuple[End, End]]:
    """The cables as built, as pairs of ends: the blueprint's with each swap applied."""
    cables = [ends(fabric, link) for link in fabric.links]
    for a, b in swaps:
        ia = next(i for i, c in enumerate(cables) if a in c)
        ib = next(i for i, c in enumerate(cables) if b in c)
        far_a = cables[ia][1] if cables[ia][0] == a else cables[ia][0]
        far_b = cables[ib][1] if cables[ib][0] == b else cables[ib][0]
        cables[ia], cables[ib] = (a, far_b), (b, far_a)
    return cables


def blueprint_peer(fabric: Fabric) -> dict[End, End]:
    peer = {}
    for link in fabric.links:
        a, b = ends(fabric, link)
        peer[a], peer[b] = b, a
    return peer


def wrong_cables(fabric: Fabric, seen: dict[End, End]) -> list[dict]:
    """`seen`: where a probe sent into each cable end came out. Every cable found that the
    blueprint does not have, once, with what the blueprint says its ends should meet."""
    peer = blueprint_peer(fabric)
    wrong, named = [], set()
    for sent, came_out in sorted(seen.items(), key=str):
        if peer.get(sent) == came_out or frozenset((sent, came_out)) in named:
            continue
        named.add(frozenset((sent, came_out)))
        wrong.append({"cable": [name(sent), name(came_out)],
                      "blueprint": [f"{name(sent)} - {name(peer.get(sent))}",
                                    f"{name(came_out)} - {name(peer.get(came_out))}"]})
    return wrong


def name(end: End | None) -> str:
    if end is None:
        return "nothing"
    node, port = end
    return port if isinstance(port, str) else f"{node}-eth{port}"


def as_built(fabric: Fabric, swaps) -> list[Link]:
    """The links to build: the blueprint's, with the swapped far ends (names stay the ports')."""
    if not swaps:
        return list(fabric.links)
    by_end = {ends(fabric, link): link for link in fabric.links}
    built = []
    for a, b in miswire(fabric, swaps):
        link = by_end.get((a, b)) or by_end.get((b, a))
        if link is not None:
            built.append(link)
            continue
        lower, upper = (a, b) if _lower(fabric, a, b) else (b, a)
        built.append(_link_between(fabric, lower, upper))
    return built


def _lower(fabric: Fabric, a: End, b: End) -> bool:
    tier = lambda e: fabric.switches[e[0]].tier if e[0] in fabric.switches else 0   # noqa: E731
    return tier(a) <= tier(b)


def _link_between(fabric: Fabric, lower: End, upper: End) -> Link:
    """A cable from `lower` (a host port or a switch port) to `upper` (a switch port), with the
    rate and interface names the blueprint gives each end."""
    template = next(l for l in fabric.links if (l.b, l.b_port) == upper
                    or (l.a in fabric.switches and (l.a, l.a_port) == upper))
    upper_intf = f"{upper[0]}-eth{upper[1]}"
    if lower[0] in fabric.switches:
        return dataclasses.replace(template, a=lower[0], a_port=lower[1], a_intf=f"{lower[0]}-eth{lower[1]}",
                                   b=upper[0], b_port=upper[1], b_intf=upper_intf)
    host_link = fabric.host_link(lower[1])
    return dataclasses.replace(host_link, b=upper[0], b_port=upper[1], b_intf=upper_intf)
