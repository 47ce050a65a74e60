"""DeepSeek-V3 multi-plane fat-tree: NIC i lives only in plane i, each plane a leaf/spine."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from testbed.model.fabric import Fabric
from testbed.model.families.leafspine import add_hosts, mesh
from testbed.model.params import Params


@dataclass(frozen=True)
class MpftParams(Params):
    family: ClassVar[str] = "mpft"
    planes: int = 2              # = NICs per host
    leaves: int = 2              # per plane
    spines: int = 2              # per plane
    hosts_per_leaf: int = 2
    host_gbps: float = 400
    uplink_gbps: float = 400


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
