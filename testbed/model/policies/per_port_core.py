"""Per-port core (HPN's default, claim C8): a core switch sends traffic for pod X that arrives
on port i out of one fixed port j, toward pod X's aggregation switch with the same coordinates
(plane, number) as the aggregation switch behind port i. The rule's action is a fast-failover
group [watch j -> output j; else the ECMP select group], so the switch itself falls back to
hashing while j is down."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from testbed.model.fabric import Fabric
from testbed.model.policies.forwarding import CoreRule
from testbed.model.routing import Route


def core_pairing(fabric: Fabric) -> dict[tuple[str, int, int], int]:
    """(core, in_port, destination pod) -> out_port.

    The aggregation switch behind in_port sits at (pod Y, key) where key is the rest of its
    coordinates (HPN: plane and number; clos3: number); traffic for pod X != Y leaves toward pod
    X's aggregation switch with the same key: same plane, same index.
    """
    pairing = {}
    for core in (s for s in fabric.switches.values() if s.role == "core"):
        by_agg = {}
        for port, nbr, _ in fabric.adjacency()[core.name]:
            agg = fabric.switches[nbr]
            by_agg[(agg.pod, agg.coords[1:])] = port
        for (pod_in, key), in_port in by_agg.items():
            for (pod_out, key_out), out_port in by_agg.items():
                if pod_out != pod_in and key_out == key:
                    pairing[(core.name, in_port, pod_out)] = out_port
    return pairing


def core_rules(fabric: Fabric, routes: Iterable[Route]) -> list[CoreRule]:
    """Per-port rules for every core route with a choice, where the paired port is on a shortest
    live path (a pairing that would send traffic back where it came from, or onto a dead or
    longer path, is left to the ECMP group)."""
    pairing = core_pairing(fabric)
    if not pairing:
        return []
    pod_of = {nic.ip: fabric.hosts[nic.host].pod for nic in fabric.nics()}
    in_ports: dict[str, list[int]] = defaultdict(list)
    for core, in_port, _ in pairing:
        if in_port not in in_ports[core]:
            in_ports[core].append(in_port)
    rules = []
    for r in routes:
        if fabric.switches[r.switch].role != "core" or len(r.ports) < 2 or r.deliver_mac:
            continue
        for in_port in sorted(in_ports[r.switch]):
            j = pairing.get((r.switch, in_port, pod_of.get(r.ip)))
            if j is not None and j != in_port and j in r.ports:
                rules.append(CoreRule(r.switch, in_port, r.ip, j, r.ports))
    return rules
