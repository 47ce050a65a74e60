"""Static per destination (DeepSeek Fig. 8, claim C12): every switch sends each destination on
one fixed port, chosen for a known traffic matrix so that no two of its flows share a link (a
greedy least-loaded assignment with deterministic restarts); destinations outside the matrix get
"destination index modulo next hops"."""
from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterable

from testbed.model.fabric import Fabric, Port
from testbed.model.paths import MAX_HOPS, Hop
from testbed.model.policies.base import NicPairs, RoutingPolicy
from testbed.model.policies.forwarding import CoreRule, Forwarding, switch_links
from testbed.model.routing import Route


def destination_index(fabric: Fabric, ip: str) -> int:
    """A destination's index under its first switch (its host's last coordinate)."""
    nic = fabric.nic(ip)
    return fabric.hosts[nic.host].coords[-1]


def all_paths(fwd: Forwarding, switch: str, in_port: int, dst: str, fixed: dict | None = None,
              rotate: int = 0, limit: int = 4096) -> list[list[Hop]]:
    """Every path toward `dst` from (`switch`, `in_port`), following the ports already `fixed`
    for `dst`; options at each switch are tried starting at position `rotate` modulo their
    number."""
    found: list[list[Hop]] = []
    fixed = fixed or {}

    def dfs(sw, port, prefix):
        if len(found) >= limit or len(prefix) >= MAX_HOPS:
            return
        options = fwd.choices(sw, port, dst)
        if not options:
            return
        if fwd.delivers(sw, dst):
            found.append(prefix + [Hop(sw, port, options[0])])
            return
        if fixed.get((sw, dst)) in options:
            options = (fixed[(sw, dst)],)
        k = rotate % len(options)
        for out in options[k:] + options[:k]:
            node, nport = fwd.peer[(sw, out)]
            if fwd.is_switch(node):
                dfs(node, nport, prefix + [Hop(sw, port, out)])
    dfs(switch, in_port, [])
    return found


def _place(fwd: Forwarding, dst: str, sources: list[str], choice: dict, load: Counter,
           index: dict[str, int], rng: random.Random | None = None) -> list[Port]:
    """Route every flow toward `dst` on the path whose links carry the fewest flows so far
    (ties: destination index modulo the ports, or at random when `rng` is given), fixing the
    ports it takes for `dst`. Adds the flows to `load`; returns the egress ports they use."""
    used: list[Port] = []
    for src in sources:
        switch, in_port = fwd.ingress(fwd.fabric.nic(src))
        paths = all_paths(fwd, switch, in_port, dst, choice, index[dst])
        if not paths:
            continue

        def cost(path):
            ports = switch_links(path, fwd)
            return (sum(1 for p in ports if load[p]), sum(load[p] for p in ports),
                    rng.random() if rng else 0)
        best = min(paths, key=cost)
        for hop in best:
            if len(fwd.choices(hop.switch, hop.in_port, dst)) > 1:
                choice[(hop.switch, dst)] = hop.out_port
        for port in switch_links(best, fwd):
            load[port] += 1
            used.append(port)
    return used


def static_choices(fabric: Fabric, routes: list[Route], matrix: Iterable = (),
                   core: Iterable[CoreRule] = (), steps: int = 2000) -> dict[tuple[str, str], int]:
    """(switch, destination ip) -> the one port that switch uses toward that destination.

    Destinations in `matrix` ([(src, dst)] IPs or NIC names) are placed greedily, each switch on
    a flow's path taking its least-loaded port; then, while some link carries two flows of the
    matrix, one destination whose flows cross such a link is placed again (min-conflicts repair,
    seeded, at most `steps` times), keeping the assignment with the fewest shared links. Every
    other destination uses port number (destination index modulo the ports): on a leaf/spine
    with as many spines as hosts per leaf, the hosts of a leaf then never share a downlink.
    A matrix flow starts at its source NIC's first port. Deterministic for the same inputs."""
    fwd = Forwarding(fabric, routes, core)
    pairs = [(fabric.nic(str(s)).ip, fabric.nic(str(d)).ip) for s, d in matrix]
    pairs = [(s, d) for s, d in pairs if (fwd.ingress(fabric.nic(s))[0], d) in fwd.routes]
    sources: dict[str, list[str]] = defaultdict(list)
    for s, d in pairs:
        sources[d].append(s)
    index = {ip: destination_index(fabric, ip) for ip in {r.ip for r in routes}}
    choice: dict[tuple[str, str], int] = {}
    load: Counter = Counter()
    used = {d: _place(fwd, d, sources[d], choice, load, index) for d in sources}

    def shared():
        return sum(1 for n in load.values() if n > 1)
    best, best_shared = dict(choice), shared()
    rng = random.Random(0)
    for _ in range(steps if best_shared else 0):
        conflicted = sorted(d for d, ports in used.items() if any(load[p] > 1 for p in ports))
        d = rng.choice(conflicted)
        for port in used[d]:
            load[port] -= 1
        for key in [k for k in choice if k[1] == d]:
            del choice[key]
        used[d] = _place(fwd, d, sources[d], choice, load, index, rng)
        if shared() < best_shared:
            best, best_shared = dict(choice), shared()
            if not best_shared:
                break
    out = {}
    for r in routes:
        if len(r.ports) > 1 and not r.deliver_mac:
            p = best.get((r.switch, r.ip))
            out[(r.switch, r.ip)] = p if p in r.ports else r.ports[index[r.ip] % len(r.ports)]
    return out


def static_routes(fabric: Fabric, routes: list[Route], matrix: Iterable = (),
                  core: Iterable[CoreRule] = ()) -> list[Route]:
    """`routes` with every ECMP choice replaced by the static one (see static_choices)."""
    chosen = static_choices(fabric, routes, matrix, core)
    return [Route(r.switch, r.ip, (chosen[(r.switch, r.ip)],), r.deliver_mac)
            if (r.switch, r.ip) in chosen else r for r in routes]


def matrix_paths(fabric: Fabric, routes: list[Route], matrix: Iterable,
                 core: Iterable[CoreRule] = ()) -> dict[tuple[str, str], list[Hop]]:
    """The path each (src, dst) of the matrix takes where every switch has one choice
    (static routes; per-port core rules), from the source NIC's first port."""
    fwd = Forwarding(fabric, routes, core)
    paths = {}
    for s, d in matrix:
        src, dst = fabric.nic(str(s)), fabric.nic(str(d))
        switch, in_port = fwd.ingress(src)

        def only(sw, in_port, options, dst=dst):
            if len(options) != 1:
                raise ValueError(f"{sw} has {len(options)} choices toward {dst.ip}")
            return options[0]
        paths[(src.ip, dst.ip)] = fwd.walk(switch, in_port, dst.ip, only)
    return paths


def shared_links(fabric: Fabric, paths: dict) -> dict[Port, list]:
    """Egress ports toward another switch (directed switch-to-switch links) that more than one
    of `paths` uses."""
    fwd = Forwarding(fabric, [])
    users = defaultdict(list)
    for key, hops in paths.items():
        for port in switch_links(hops or [], fwd):
            users[port].append(key)
    return {port: keys for port, keys in users.items() if len(keys) > 1}


class Static(RoutingPolicy):
    """The routes of every NIC depend on the whole matrix, so any change recomputes them all."""
    name = "static"
    summary = "one fixed port per destination, placed so the flows of a known matrix share no link"
    options = (NicPairs("matrix", "the known traffic matrix: [[src, dst], ...] NICs"),)
    whole_fabric = True

    def routes(self, fabric: Fabric, routes: list[Route], core: list, opts: dict) -> list[Route]:
        return static_routes(fabric, routes, opts["matrix"], core)


POLICY = Static()
