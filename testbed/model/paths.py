"""A packet's path through the fabric, hop by hop: the one walker behind computed paths
(testbed.model.policies) and traced ones (testbed.emulation.trace).

Vocabulary: a Link is a cable (testbed.model.fabric); a Port is (switch, OpenFlow port), one
end of a cable seen from its switch; a Hop is one switch a packet crosses, with the ports it
enters and leaves by.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

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

