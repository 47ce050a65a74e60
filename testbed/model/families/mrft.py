"""Multi-rail fat-tree, MPFT's baseline: every rail has its own leaves, the spines are shared."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from testbed.model.fabric import Fabric
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
    for rail in range(p.rails):
        for j in range(p.leaves):
            fab.add_switch(f"r{rail}l{j}", "leaf", (rail, j))
    for k in range(p.spines):
        fab.add_switch(f"s{k}", "spine", (k,))
    for j in range(p.leaves):
        for i in range(p.hosts_per_leaf):
            host = fab.add_host(f"g{j}h{i}", (j, i), list(range(p.rails)), 1,
                                lambda n, j=j, i=i: f"10.{n}.{j}.{i + 1}")
            for nic in host.nics:
                fab.attach(nic, 0, f"r{nic.index}l{j}", p.host_gbps)
    for rail in range(p.rails):
        for j in range(p.leaves):
            for k in range(p.spines):
                fab.connect(f"r{rail}l{j}", f"s{k}", p.uplink_gbps)
    return fab
