"""DeepSeek-V3 multi-plane fat-tree: NIC i lives only in plane i, each plane a leaf/spine."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from testbed.model.fabric import Fabric
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
    for plane in range(p.planes):
        for j in range(p.leaves):
            fab.add_switch(f"pl{plane}l{j}", "leaf", (plane, j), plane=plane)
        for k in range(p.spines):
            fab.add_switch(f"pl{plane}s{k}", "spine", (plane, k), plane=plane)
    for j in range(p.leaves):
        for i in range(p.hosts_per_leaf):
            host = fab.add_host(f"g{j}h{i}", (j, i), list(range(p.planes)), 1,
                                lambda n, j=j, i=i: f"10.{n}.{j}.{i + 1}")
            for nic in host.nics:
                fab.attach(nic, 0, f"pl{nic.index}l{j}", p.host_gbps)
    for plane in range(p.planes):
        for j in range(p.leaves):
            for k in range(p.spines):
                fab.connect(f"pl{plane}l{j}", f"pl{plane}s{k}", p.uplink_gbps)
    return fab
