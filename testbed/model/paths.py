"""A packet's path through the fabric, hop by hop: the one walker behind computed paths
(testbed.model.policies) and traced ones (testbed.emulation.trace).

Vocabulary: a Link is a cable (testbed.model.fabric); a Port is (switch, OpenFlow port), one
end of a cable seen from its switch; a Hop is one switch a packet crosses, with the ports it
enters and leaves by.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from testbed.core.errors import TestbedError
from testbed.model.fabric import Fabric, Port

MAX_HOPS = 16   # the fabrics here are at most 5 switches deep: a longer walk is a loop


@dataclass(frozen=True)
class Hop:
    switch: str
    in_port: int
    out_port: int | None      # None: the switch dropped it


class LoopError(TestbedError):
    """A walk crossed more than MAX_HOPS switches."""


def walk(fabric: Fabric, first: Port, choose_out_port: Callable[[str, int], int | None],
         peer: dict | None = None) -> list[Hop]:
    """The hops of a packet entering switch `first` = (switch, in_port).

    At each switch `choose_out_port(switch, in_port)` says which port it leaves on (None:
    dropped); the cable behind that port says where it enters next. The walk ends at a drop or
    where it leaves the fabric toward a host; past MAX_HOPS switches it raises LoopError.
    `peer` is fabric.port_peer(), for callers that walk often.
    """
    peer = fabric.port_peer() if peer is None else peer
    switch, in_port = first
    hops: list[Hop] = []
    for _ in range(MAX_HOPS):
        out = choose_out_port(switch, in_port)
        hops.append(Hop(switch, in_port, out))
        if out is None:
            return hops
        node, node_port = peer[(switch, out)]
        if node not in fabric.switches:
            return hops
        switch, in_port = node, node_port
    raise LoopError(f"more than {MAX_HOPS} hops from {first} (a loop?)")



def sending_ports(fabric: Fabric, hops: list[Hop], ends: dict | None = None) -> list[str]:
    """The interfaces a packet leaves by along `hops`: the host port that feeds the first switch,
    then every switch's out port. Each names one direction of one cable (the emulator shapes each
    end of a cable on its own), so they are the links of the packet's flow in a fluid model.
    `ends` is switch_ends(fabric), for callers that ask often."""
    ends = switch_ends(fabric) if ends is None else ends
    first = hops[0]
    out = [ends[(first.switch, first.in_port)][1]]
    for hop in hops:
        if hop.out_port is None:
            raise ValueError(f"the path is dropped at {hop.switch}: no flow to model")
        out.append(ends[(hop.switch, hop.out_port)][0])
    return out


def port_rates(fabric: Fabric) -> dict[str, float]:
    """The emulated rate (Mbit/s) each interface sends at: both ends of every cable."""
    return {intf: fabric.link_mbit(l) for l in fabric.links for intf in (l.a_intf, l.b_intf)}


def switch_ends(fabric: Fabric) -> dict[Port, tuple[str, str]]:
    """(switch, port) -> (its interface, the interface at the cable's other end)."""
    ends = {}
    for l in fabric.links:
        ends[(l.b, l.b_port)] = (l.b_intf, l.a_intf)
        if l.a in fabric.switches:
            ends[(l.a, l.a_port)] = (l.a_intf, l.b_intf)
    return ends
