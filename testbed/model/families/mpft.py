"""DeepSeek-V3 multi-plane fat-tree: NIC i lives only in plane i, each plane a leaf/spine."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from testbed.model import budget_mpft
from testbed.model.fabric import Fabric, Switch
from testbed.model.families.family import Budget, Family
from testbed.model.families.leafspine import add_hosts, group_unit, mesh
from testbed.model.limits import Size
from testbed.model.params import HOSTS_PER_OCTET, IP_OCTET, OPENFLOW_PORTS, Params


@dataclass(frozen=True)
class MpftParams(Params):
    family: ClassVar[str] = "mpft"
    planes: int = 2              # = NICs per host
    leaves: int = 2              # per plane
    spines: int = 2              # per plane
    hosts_per_leaf: int = 2
    host_gbps: float = 400
    uplink_gbps: float = 400

    BOUNDS = {
        **Params.BOUNDS,
        "planes": (1, IP_OCTET, "NIC i is in plane i, the second octet of its IP"),
        "leaves": (1, IP_OCTET, "per plane; the leaf is the third octet of a NIC's IP"),
        "spines": (1, OPENFLOW_PORTS, "per plane: each leaf cables to all of them"),
        "hosts_per_leaf": (1, HOSTS_PER_OCTET, "the host is the last octet of its IPs"),
    }

    def ports(self) -> dict[str, tuple[int, int]]:
        return {"leaf": (self.hosts_per_leaf, self.spines), "spine": (self.leaves, 0)}

    def size(self) -> Size:
        hosts = self.leaves * self.hosts_per_leaf
        nics = hosts * self.planes
        return Size(switches=self.planes * (self.leaves + self.spines), hosts=hosts, nics=nics,
                    links=nics + self.planes * self.leaves * self.spines)

    def link_gbps(self) -> list[float]:
        return [self.host_gbps, self.uplink_gbps]


def build(p: MpftParams) -> Fabric:
    fab = Fabric("mpft", p)
    leaves, spines = [], []      # [plane][index]
    for plane in range(p.planes):
        leaves.append([fab.add_switch(f"pl{plane}l{j}", "leaf", (plane, j), plane=plane)
                       for j in range(p.leaves)])
        spines.append([fab.add_switch(f"pl{plane}s{k}", "spine", (plane, k), plane=plane)
                       for k in range(p.spines)])
    add_hosts(fab, p, p.planes, lambda plane, j: leaves[plane][j])
    for plane in range(p.planes):
        mesh(fab, leaves[plane], spines[plane], p.uplink_gbps)
    return fab


def by_plane(fab: Fabric, s: Switch) -> tuple[int, str]:
    """Drawing: every switch belongs to one plane."""
    return s.plane, f"plane {s.plane}"


# DeepSeek-V3 sec. 5.1 / Table 3 (B4, budget_mpft.py): 64-port 400G switches, per plane 64 leaves
# x 32 hosts down and 32 spines, 8 planes (NIC i of every node in plane i).
PAPER = {"planes": 8, "leaves": 64, "spines": 32, "hosts_per_leaf": 32, "host_gbps": 400,
         "uplink_gbps": 400, "radix": 64}

MPFT = Family("mpft", MpftParams, build, group_unit, group=by_plane,
              budget=Budget(("B4",), {"paper": PAPER}, budget_mpft.count))
