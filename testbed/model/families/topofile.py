"""The `file` family: a fabric read from a topology file (TOML), for a topology no family makes.

`hpn-testbed up file --set topology=examples/three-tier.toml --check`. The file names switches
(role, plane, rail, pod), hosts (NICs, ports per NIC, rails) and cables (topofile_read.py checks
it, one line per problem); the model derives the rest the way every family does: DPIDs from role
and coordinates (plane, rail, the switch's number within its role), switch ports numbered in
cable order, NIC IPs 10.NIC.(host // 250).(host % 250 + 1) in host order, MACs that spell the IP.
The controller routes it like any family: shortest paths over the cables, ECMP where they tie.
"""
from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from testbed.core.errors import ParamError
from testbed.model.fabric import TIERS, Fabric
from testbed.model.families.family import Family
from testbed.model.families.topofile_read import Topology, read
from testbed.model.limits import Size
from testbed.model.params import HOSTS_PER_OCTET, Params

DEFAULT = Path(__file__).with_name("default.toml")


@dataclass(frozen=True)
class FileParams(Params):
    family: ClassVar[str] = "file"
    topology: str = str(DEFAULT)   # the topology file (kept absolute: the controller runs elsewhere)

    def __post_init__(self):
        object.__setattr__(self, "topology", str(Path(self.topology).resolve()))

    def rules(self) -> None:
        self.read()

    def read(self) -> Topology:
        return topology_of(self.topology, self.radix)

    def switch_radix(self) -> int:
        """The file's own `radix` when it sets one (build() gives the fabric that one too)."""
        return self.read().radix or self.radix

    def ports(self) -> dict[str, tuple[int, int]]:
        """role -> (down, up) of its busiest switch, counted from the cables (read() has already
        held every switch to the file's radix)."""
        t = self.read()
        down = {s.name: 0 for s in t.switches}
        up = dict(down)
        for c in t.cables:
            down[c.b[0]] += 1
            if c.a[1] is None:
                up[c.a[0]] += 1
        ports: dict[str, tuple[int, int]] = {}
        for s in t.switches:
            ports[s.role] = max(ports.get(s.role, (0, 0)), (down[s.name], up[s.name]), key=sum)
        return ports

    def size(self) -> Size:
        t = self.read()
        return Size(switches=len(t.switches), hosts=len(t.hosts),
                    nics=sum(len(h.rails) for h in t.hosts), links=len(t.cables))

    def link_gbps(self) -> list[float]:
        return [c.gbps for c in self.read().cables]


def topology_of(path: str, radix: int) -> Topology:
    """read(), once per version of the file (its size and modification time)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise ParamError(f"topology={path}: {e.strerror}") from None
    return _cached(path, st.st_mtime_ns, st.st_size, radix)


@functools.lru_cache(maxsize=32)
def _cached(path: str, mtime: int, size: int, radix: int) -> Topology:
    return read(path, radix)


def build(p: FileParams) -> Fabric:
    t = p.read()
    fab = Fabric("file", dataclasses.replace(p, radix=t.radix or p.radix))
    numbers: dict[str, int] = {}
    for s in t.switches:
        numbers[s.role] = numbers.get(s.role, -1) + 1
        fab.add_switch(s.name, s.role, (s.plane or 0, s.rail or 0, numbers[s.role]), s.plane, s.pod)
    for h_number, h in enumerate(t.hosts):
        group, last = divmod(h_number, HOSTS_PER_OCTET)
        fab.add_host(h.name, (group, last), list(h.rails), h.ports,
                     lambda nic, g=group, x=last: f"10.{nic}.{g}.{x + 1}")
    for c in t.cables:
        if c.a[1] is None:
            fab.connect(c.a[0], c.b[0], c.gbps)
        else:
            fab.attach(fab.hosts[c.a[0]].nics[c.a[1]], c.a[2], c.b[0], c.gbps)
    unreachable(fab, t.path)
    return fab


def unreachable(fab: Fabric, path: str) -> None:
    """ParamError (one line per host) for each host outside the connected part of the fabric
    that holds the most hosts: the others could not reach it."""
    part = fab.parts()
    of = {h: {part[sw] for nic in host.nics for sw, _ in fab.attachments(nic)}
          for h, host in fab.hosts.items()}
    counts: dict[int, int] = {}
    for parts in of.values():
        for p in parts:
            counts[p] = counts.get(p, 0) + 1
    main = max(counts, key=lambda p: counts[p])
    lines = [f"{path}: [[host]] {h}: unreachable: no cable path to the rest of the fabric's hosts"
             for h, parts in of.items() if main not in parts]
    if lines:
        raise ParamError("\n".join(lines))


def unit(fab: Fabric, node: str) -> str | None:
    """Placement: the switches a host is cabled to go with it (a multi-homed host joins its
    switches into one unit), a pod's switches with the pod; other switches are the top tier."""
    return fab._table("file_units", lambda: units(fab)).get(node)


def units(fab: Fabric) -> dict[str, str]:
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x
    for link in fab.host_links():
        parent[root(link.a)] = root(link.b)
    for s in fab.switches.values():
        if s.pod is not None:
            parent[root(f"pod {s.pod}")] = root(s.name)
    members: dict[str, list[str]] = {}
    for node in list(parent):
        members.setdefault(root(node), []).append(node)
    label = {r: min((m for m in ms if m in fab.switches), key=lambda m: (TIERS[fab.switches[m].role], m))
             for r, ms in members.items()}
    return {node: f"u-{label[root(node)]}" for node in parent if not node.startswith("pod ")}


FILE = Family("file", FileParams, build, unit, shared="top tier",
              title=lambda p: {"topology": Path(p.topology).name})
