"""Multi-rail fat-tree, MPFT's baseline: every rail has its own leaves, the spines are shared."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from testbed.model.fabric import Fabric, Switch
from testbed.model.families.family import Family
from testbed.model.families.leafspine import add_hosts, group_unit, mesh
from testbed.model.limits import Size
from testbed.model.params import HOSTS_PER_OCTET, IP_OCTET, OPENFLOW_PORTS, Params


@dataclass(frozen=True)
class MrftParams(Params):
    family: ClassVar[str] = "mrft"
    rails: int = 2               # = NICs per host
    leaves: int = 2              # per rail
    spines: int = 2              # shared by all rails
    hosts_per_leaf: int = 2
    host_gbps: float = 400
    uplink_gbps: float = 400

    BOUNDS = {
        **Params.BOUNDS,
        "rails": (1, IP_OCTET, "NIC i is on rail i, the second octet of its IP"),
        "leaves": (1, IP_OCTET, "per rail; the leaf is the third octet of a NIC's IP"),
        "spines": (1, OPENFLOW_PORTS, "shared: each leaf cables to all of them"),
        "hosts_per_leaf": (1, HOSTS_PER_OCTET, "the host is the last octet of its IPs"),
    }

    def ports(self) -> dict[str, tuple[int, int]]:
        return {"leaf": (self.hosts_per_leaf, self.spines), "spine": (self.rails * self.leaves, 0)}

    def size(self) -> Size:
        hosts = self.leaves * self.hosts_per_leaf
        nics = hosts * self.rails
        return Size(switches=self.rails * self.leaves + self.spines, hosts=hosts, nics=nics,
                    links=nics + self.rails * self.leaves * self.spines)

    def link_gbps(self) -> list[float]:
        return [self.host_gbps, self.uplink_gbps]


def build(p: MrftParams) -> Fabric:
    fab = Fabric("mrft", p)
    leaves = [[fab.add_switch(f"r{rail}l{j}", "leaf", (rail, j)) for j in range(p.leaves)]
              for rail in range(p.rails)]          # [rail][index]
    spines = [fab.add_switch(f"s{k}", "spine", (k,)) for k in range(p.spines)]
    add_hosts(fab, p, p.rails, lambda rail, j: leaves[rail][j])
    for rail in range(p.rails):
        mesh(fab, leaves[rail], spines, p.uplink_gbps)
    return fab


def by_rail(fab: Fabric, s: Switch) -> tuple[int, str] | None:
    """Drawing: leaves by rail; the spines are shared by all rails, so they stay grey."""
    return (s.coords[0], f"rail {s.coords[0]}") if s.role == "leaf" else None


MRFT = Family("mrft", MrftParams, build, group_unit, group=by_rail)
