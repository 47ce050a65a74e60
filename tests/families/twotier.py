"""A throwaway family: a two-tier tree (leaves under one root switch), the whole of what adding a
family takes: its parameters, its build and one Family. tests/unit/test_families.py registers it
with one call (families.load, what a `--custom FILE.py` would call) and asks it everything the
built-in families answer; tests/integration/test_twotier.py brings it up and checks it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from testbed.model.budget_entries import entry
from testbed.model.fabric import Fabric
from testbed.model.families import Budget, Family
from testbed.model.limits import Size
from testbed.model.params import HOSTS_PER_OCTET, IP_OCTET, Params


@dataclass(frozen=True)
class TwoTierParams(Params):
    family: ClassVar[str] = "twotier"
    leaves: int = 3
    hosts_per_leaf: int = 2
    host_gbps: float = 100
    uplink_gbps: float = 100

    BOUNDS = {
        **Params.BOUNDS,
        "leaves": (1, IP_OCTET, "the leaf is the third octet of a host's IP"),
        "hosts_per_leaf": (1, HOSTS_PER_OCTET, "the host is the last octet of its IP"),
    }

    def ports(self) -> dict[str, tuple[int, int]]:
        return {"leaf": (self.hosts_per_leaf, 1), "spine": (self.leaves, 0)}

    def size(self) -> Size:
        hosts = self.leaves * self.hosts_per_leaf
        return Size(switches=self.leaves + 1, hosts=hosts, nics=hosts, links=hosts + self.leaves)

    def link_gbps(self) -> list[float]:
        return [self.host_gbps, self.uplink_gbps]


def build(p: TwoTierParams) -> Fabric:
    fab = Fabric("twotier", p)
    root = fab.add_switch("root", "spine", (0,))
    for j in range(p.leaves):
        leaf = fab.add_switch(f"l{j}", "leaf", (j,), pod=j)
        for i in range(p.hosts_per_leaf):
            host = fab.add_host(f"l{j}h{i}", (j, i), [0], 1, lambda n, j=j, i=i: f"10.0.{j}.{i + 1}",
                                pod=j)
            fab.attach(host.nics[0], 0, leaf, p.host_gbps)
        fab.connect(leaf, root, p.uplink_gbps)
    return fab


def unit(fab: Fabric, node: str) -> str | None:
    """A leaf and its hosts; the root is the top."""
    if node in fab.hosts:
        return f"l{fab.hosts[node].coords[0]}"
    sw = fab.switches[node]
    return None if sw.role == "spine" else f"l{sw.coords[0]}"


def count(fab: Fabric) -> dict:
    return {"T1": {"hosts": entry("hosts under the root", len(fab.hosts), 64 * 32)}}


TWOTIER = Family("twotier", TwoTierParams, build, unit, shared="leaves",
                 presets={"wide": {"leaves": 6, "hosts_per_leaf": 1}},
                 budget=Budget(("T1",), {"paper": {"leaves": 64, "hosts_per_leaf": 32, "radix": 64}},
                               count))
