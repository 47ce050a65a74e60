"""Placement of a fabric on several servers (pure, no root): whole units, so host links are never cut.

A unit is what must stay together, as each family says (Family.unit): an HPN (or rail-only)
segment (its ToRs and its hosts: every NIC port is cabled to a ToR of its own segment), an
MPFT/MRFT host group (the hosts under leaf index j and
the leaves j of every plane or rail), a clos3 pod (edges, aggregation switches, hosts). The top
tier (HPN aggregation and core, the spines, the clos3 core) is one more group, kept on one
server: the one given the fewest units. Units go to servers in contiguous blocks (neighbouring
segments and pods together), the first servers taking one unit more where they do not divide.
Only switch-to-switch links between units, or between a unit and the top tier, are cut.
"""
from __future__ import annotations

from dataclasses import dataclass

from testbed.core.errors import ParamError
from testbed.model import families
from testbed.model.fabric import Fabric, Link

TOP = "top"


def unit_of(fabric: Fabric, node: str) -> str:
    """The unit a switch or host belongs to (a label such as 'p0s1', 'g2', 'p1'), or TOP: the
    family's own answer (Family.unit)."""
    unit = families.of(fabric).unit(fabric, node)
    return TOP if unit is None else unit


@dataclass(frozen=True)
class Placement:
    servers: tuple[str, ...]
    nodes: dict[str, str]                  # node -> server
    units: dict[str, str]                  # unit label -> server (TOP included)
    cut: tuple[Link, ...]                  # links whose two ends are on different servers

    def server_of(self, node: str) -> str:
        return self.nodes[node]

    def on(self, server: str) -> list[str]:
        return [n for n, s in self.nodes.items() if s == server]

    def summary(self, fabric: Fabric) -> dict:
        per_server = {}
        for server in self.servers:
            nodes = self.on(server)
            per_server[server] = {
                "units": [u for u, s in self.units.items() if s == server],
                "switches": sum(1 for n in nodes if n in fabric.switches),
                "hosts": sum(1 for n in nodes if n in fabric.hosts)}
        return {"servers": per_server, "cut_links": len(self.cut),
                "host_links_cut": sum(1 for l in self.cut if l.a in fabric.hosts)}


def server_names(servers) -> tuple[str, ...]:
    """`servers` as names: an int N gives server0..server(N-1); a list or 'A,B' is taken as is."""
    if isinstance(servers, int):
        return tuple(f"server{i}" for i in range(servers))
    if isinstance(servers, str):
        servers = servers.split(",")
    names = tuple(s.strip() for s in servers)
    if any(not n for n in names) or len(set(names)) != len(names):
        raise ParamError(f"--servers {','.join(names)!r}: names must be non-empty and distinct")
    return names


def place(fabric: Fabric, servers) -> Placement:
    """Place `fabric` on `servers` (a count or names). ParamError if they cannot all get a unit."""
    if isinstance(servers, int) and servers < 1:
        raise ParamError(f"--servers {servers}: need at least one server")
    units: list[str] = []
    node_unit = {}
    for node in [*fabric.switches, *fabric.hosts]:
        node_unit[node] = unit = unit_of(fabric, node)
        if unit != TOP and unit not in units:
            units.append(unit)
    count = servers if isinstance(servers, int) else len(server_names(servers))
    if count > len(units):      # counted before a name is made: --servers 100000000000 is instant
        raise ParamError(f"--servers {count}: this {fabric.family} fabric has only {len(units)} "
                         f"units to place ({', '.join(units)}); use at most {len(units)} servers")
    names = server_names(servers)
    unit_server = {}
    base, extra = divmod(len(units), len(names))
    i = 0
    for k, server in enumerate(names):
        for unit in units[i:i + base + (k < extra)]:
            unit_server[unit] = server
        i += base + (k < extra)
    unit_server[TOP] = names[-1]       # the last server has the fewest units
    nodes = {node: unit_server[unit] for node, unit in node_unit.items()}
    cut = tuple(l for l in fabric.links if nodes[l.a] != nodes[l.b])
    if any(l.a in fabric.hosts for l in cut):   # the units above make this impossible
        raise AssertionError("a host link was cut")
    return Placement(names, nodes, unit_server, cut)
