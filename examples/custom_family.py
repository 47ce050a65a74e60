"""A family of your own, as a plug-in: `hpn-testbed topo show dualroot --custom
examples/custom_family.py` (also on `up` and `run`, or `custom = "custom_family.py"` in an
experiment file). Two-tier: leaves, each cabled to both of two roots, so every leaf-to-leaf flow
has two equal-cost paths. Its parameters are typed and ranged like ours; `register` checks the
family, and `make` checks its size by arithmetic before anything is built."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from testbed.model.fabric import Fabric
from testbed.model.families import Family, register
from testbed.model.limits import Size
from testbed.model.params import HOSTS_PER_OCTET, IP_OCTET, Params


@dataclass(frozen=True)
class DualRootParams(Params):
    family: ClassVar[str] = "dualroot"
    leaves: int = 3
    hosts_per_leaf: int = 2
    host_gbps: float = 100
    uplink_gbps: float = 100

    BOUNDS: ClassVar[dict[str, tuple]] = {
        **Params.BOUNDS,
        "leaves": (1, IP_OCTET, "the leaf is the third octet of a host's IP"),
        "hosts_per_leaf": (1, HOSTS_PER_OCTET, "the host is the last octet of its IP"),
    }

    def ports(self) -> dict[str, tuple[int, int]]:
        """Ports per switch role, (down, up): checked against the radix before building."""
        return {"leaf": (self.hosts_per_leaf, 2), "spine": (self.leaves, 0)}

    def size(self) -> Size:
        hosts = self.leaves * self.hosts_per_leaf
        return Size(switches=self.leaves + 2, hosts=hosts, nics=hosts,
                    links=hosts + 2 * self.leaves)

    def link_gbps(self) -> list[float]:
        return [self.host_gbps, self.uplink_gbps]


def build(p: DualRootParams) -> Fabric:
    fab = Fabric("dualroot", p)
    roots = [fab.add_switch(f"root{r}", "spine", (r,)) for r in range(2)]
    for j in range(p.leaves):
        leaf = fab.add_switch(f"l{j}", "leaf", (j,), pod=j)
        for i in range(p.hosts_per_leaf):
            host = fab.add_host(f"l{j}h{i}", (j, i), [0], 1,
                                lambda n, j=j, i=i: f"10.0.{j}.{i + 1}", pod=j)
            fab.attach(host.nics[0], 0, leaf, p.host_gbps)
        for root in roots:
            fab.connect(leaf, root, p.uplink_gbps)
    return fab


def unit(fab: Fabric, node: str) -> str | None:
    """Placement: a leaf and its hosts go to one server; the roots are the top tier."""
    if node in fab.hosts:
        return f"l{fab.hosts[node].coords[0]}"
    sw = fab.switches[node]
    return None if sw.role == "spine" else f"l{sw.coords[0]}"


register(Family("dualroot", DualRootParams, build, unit, shared="roots",
                presets={"wide": {"leaves": 6, "hosts_per_leaf": 1}}))
