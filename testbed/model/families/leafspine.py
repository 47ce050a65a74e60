"""What the two-tier leaf/spine families (mpft, mrft) build alike: hosts under the leaves, one NIC
per plane or rail, and every leaf cabled to every spine above it."""
from __future__ import annotations

from collections.abc import Callable

from testbed.model.fabric import Fabric


def add_hosts(fab: Fabric, p, nics: int, leaf_of: Callable[[int, int], str]) -> None:
    """`p.hosts_per_leaf` hosts per leaf index j, each with `nics` single-port NICs: NIC n of
    host i is 10.n.j.(i+1), cabled to leaf_of(n, j) at `p.host_gbps`."""
    for j in range(p.leaves):
        for i in range(p.hosts_per_leaf):
            host = fab.add_host(f"g{j}h{i}", (j, i), list(range(nics)), 1,
                                lambda n, j=j, i=i: f"10.{n}.{j}.{i + 1}")
            for nic in host.nics:
                fab.attach(nic, 0, leaf_of(nic.index, j), p.host_gbps)


def mesh(fab: Fabric, leaves: list[str], spines: list[str], gbps: float) -> None:
    """Cable every leaf to every spine."""
    for leaf in leaves:
        for spine in spines:
            fab.connect(leaf, spine, gbps)


def group_unit(fab: Fabric, node: str) -> str | None:
    """Placement: a host group (the hosts under leaf index j and the leaves j of every plane or
    rail: coords (plane or rail, j)); the spines are the top."""
    if node in fab.hosts:
        return f"g{fab.hosts[node].coords[0]}"
    sw = fab.switches[node]
    return f"g{sw.coords[1]}" if sw.role == "leaf" else None
