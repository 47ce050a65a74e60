"""C14's rings and the model of their paths: which NICs a ring joins, the source ports its QPs
draw, the paths a connection spread over every spine takes, and the max-min-fair completion of
a ring so spread (the prediction). Pure: no emulation."""
from __future__ import annotations

import random

from testbed.model import fluid
from testbed.model.paths import port_rates, sending_ports, walk
from testbed.model.routing import routes_to

ROCE_PORT = 4791
ROCE_SPORTS = range(0xC000, 0x10000)     # where RoCE v2 source ports live
META_GAIN = 1.40      # Meta, SIGCOMM'24: up to +40% AllReduce with more QPs hashed on the QP
META_PIN_LOSS = 0.30  # ... and pinning paths per destination lost more than 30% on partly allocated racks


def ring_order(fab) -> list:
    """Every host's NIC 0, leaf by leaf in turn (host 0 of each leaf, then host 1, ...), so that
    each ring hop goes from one leaf to the next: every hop crosses the spines."""
    by_leaf: dict[str, list] = {}
    for host in fab.hosts.values():
        nic = host.nics[0]
        by_leaf.setdefault(fab.attachments(nic)[0][0], []).append(nic)
    leaves = [sorted(nics, key=lambda n: n.name) for _, nics in sorted(by_leaf.items())]
    return [leaf[i] for i in range(min(map(len, leaves))) for leaf in leaves]


def ring_hops(ring: list) -> list[tuple]:
    return [(src, ring[(k + 1) % len(ring)]) for k, src in enumerate(ring)]


def draw_sports(rng: random.Random, hops: int, qps: int) -> list[list[int]]:
    """Fresh source ports for every QP of every hop, all distinct."""
    ports = rng.sample(ROCE_SPORTS, hops * qps)
    return [ports[k * qps:(k + 1) * qps] for k in range(hops)]


def spread_paths(fab, src, dst) -> list[list[str]]:
    """The sending interfaces of every equal-cost path from `src` to `dst` (path k takes next
    hop k modulo the choices at each switch): what a connection spread over all of them uses."""
    routes = {r.switch: r for r in routes_to(fab, dst.ip, dst.mac, fab.attachments(dst))}
    first = fab.attachments(src)[0]
    paths = []
    for k in range(len(routes[first[0]].ports)):
        hops = walk(fab, first, lambda sw, _in, k=k: routes[sw].ports[k % len(routes[sw].ports)])
        paths.append(sending_ports(fab, hops))
    return paths


def ideal_seconds(fab, hops: list[tuple], per_hop_mbit: float, demand_mbit: float) -> float:
    """The max-min-fair completion of the ring with every hop spread evenly over every path."""
    paths, sizes, demands = [], [], []
    for src, dst in hops:
        spread = spread_paths(fab, src, dst)
        paths += spread
        sizes += [per_hop_mbit / len(spread)] * len(spread)
        demands += [demand_mbit / len(spread)] * len(spread)
    return fluid.makespan(port_rates(fab), paths, sizes, demands)


def shares(loads: list[float]) -> list[float]:
    total = sum(loads)
    return [round(x / total, 3) if total else 0.0 for x in loads]


def finite(seconds: float) -> float | None:
    """A completion time, or None for one that never comes (a full port delivered nothing)."""
    return round(seconds, 4) if seconds < float("inf") else None


def link_load(paths: list[list[str]], demand: float) -> dict[str, float]:
    """What each switch port is offered (Mbit/s) by the QPs the traces put on it (a path's first
    interface is the host's own port: the NIC's pacing, not the fabric's)."""
    load: dict[str, float] = {}
    for path in paths:
        for intf in path[1:]:
            load[intf] = load.get(intf, 0.0) + demand
    return load

