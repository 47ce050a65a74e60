"""A classic three-tier Clos with ECMP at every tier: the baseline that suffers hash polarization."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from testbed.core.errors import ParamError
from testbed.model.fabric import Fabric
from testbed.model.families.family import Family
from testbed.model.limits import Size
from testbed.model.params import HOSTS_PER_OCTET, IP_OCTET, OPENFLOW_PORTS, Params


@dataclass(frozen=True)
class Clos3Params(Params):
    family: ClassVar[str] = "clos3"
    pods: int = 2
    edges: int = 2               # ToRs per pod
    aggs: int = 2                # aggregation switches per pod
    cores: int = 2
    hosts_per_edge: int = 2
    host_gbps: float = 100
    uplink_gbps: float = 100

    BOUNDS = {
        **Params.BOUNDS,
        "pods": (1, IP_OCTET, "pod x edge numbers the third octet of a host's IP"),
        "edges": (1, IP_OCTET, "pod x edge numbers the third octet of a host's IP"),
        "aggs": (1, OPENFLOW_PORTS, "each edge cables to all of its pod's"),
        "cores": (1, OPENFLOW_PORTS, "each aggregation switch cables to all of them"),
        "hosts_per_edge": (1, HOSTS_PER_OCTET, "the host is the last octet of its IP"),
    }

    def rules(self) -> None:
        if self.pods * self.edges > IP_OCTET:
            raise ParamError(f"pods={self.pods} x edges={self.edges}: at most {IP_OCTET} edge "
                             "switches in all (an edge is the third octet of a host's IP)")

    def ports(self) -> dict[str, tuple[int, int]]:
        return {"edge": (self.hosts_per_edge, self.aggs), "agg": (self.edges, self.cores),
                "core": (self.pods * self.aggs, 0)}

    def size(self) -> Size:
        hosts = self.pods * self.edges * self.hosts_per_edge
        links = hosts + self.pods * self.edges * self.aggs + self.pods * self.aggs * self.cores
        return Size(switches=self.pods * (self.edges + self.aggs) + self.cores, hosts=hosts,
                    nics=hosts, links=links)

    def link_gbps(self) -> list[float]:
        return [self.host_gbps, self.uplink_gbps]


def build(p: Clos3Params) -> Fabric:
    fab = Fabric("clos3", p)
    for pod in range(p.pods):
        for j in range(p.edges):
            edge = fab.add_switch(f"p{pod}e{j}", "edge", (pod, j), pod=pod)
            for i in range(p.hosts_per_edge):
                host = fab.add_host(f"p{pod}e{j}h{i}", (pod, j, i), [0], 1,
                                    lambda n, g=pod * p.edges + j, i=i: f"10.0.{g}.{i + 1}", pod=pod)
                fab.attach(host.nics[0], 0, edge, p.host_gbps)
        for k in range(p.aggs):
            fab.add_switch(f"p{pod}a{k}", "agg", (pod, k), pod=pod)
    cores = [fab.add_switch(f"c{m}", "core", (m,)) for m in range(p.cores)]
    for pod in range(p.pods):
        for j in range(p.edges):
            for k in range(p.aggs):
                fab.connect(f"p{pod}e{j}", f"p{pod}a{k}", p.uplink_gbps)
    for pod in range(p.pods):
        for k in range(p.aggs):
            for core in cores:
                fab.connect(f"p{pod}a{k}", core, p.uplink_gbps)
    return fab


def pod_unit(fab: Fabric, node: str) -> str | None:
    """Placement: a pod (its edges, aggregation switches and hosts); the core is the top."""
    if node in fab.hosts:
        return f"p{fab.hosts[node].coords[0]}"
    sw = fab.switches[node]
    return None if sw.role == "core" else f"p{sw.coords[0]}"


# drawn by pod (the default); its shared switches are the core, shared by all pods
CLOS3 = Family("clos3", Clos3Params, build, pod_unit, shared="pods")
