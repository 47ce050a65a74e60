"""Multi-rail fat-tree, MPFT's baseline: every rail has its own leaves, the spines are shared."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from testbed.model.fabric import Fabric
from testbed.model.families.leafspine import add_hosts, mesh
from testbed.model.params import Params


@dataclass(frozen=True)
class MrftParams(Params):
    family: ClassVar[str] = "mrft"
    rails: int = 2               # = NICs per host
    leaves: int = 2              # per rail
    spines: int = 2              # shared by all rails
    hosts_per_leaf: int = 2
    host_gbps: float = 400
    uplink_gbps: float = 400


def build(p: MrftParams) -> Fabric:
    fab = Fabric("mrft", p)
    leaves = [[fab.add_switch(f"r{rail}l{j}", "leaf", (rail, j)) for j in range(p.leaves)]
              for rail in range(p.rails)]          # [rail][index]
    spines = [fab.add_switch(f"s{k}", "spine", (k,)) for k in range(p.spines)]
    add_hosts(fab, p, p.rails, lambda rail, j: leaves[rail][j])
    for rail in range(p.rails):
        mesh(fab, leaves[rail], spines, p.uplink_gbps)
    return fab
