"""Routing policies on top of the /32 routes of testbed.routing, computed without touching a switch.

The controller (controller/app.py) only pushes what these functions return and feeds them what
it observes (port status, port and flow counters, TCP SYNs it sees). Four knobs, chosen with the
`routing` options of a run (`hpn-testbed up --policy ... --core ... --ecmp ...`):

* ``ecmp`` (the default policy): every switch with several next hops toward a NIC hashes the
  5-tuple over them (an OpenFlow select group; see testbed.routing).
* ``core: per-port`` (HPN's default, claim C8): a core switch forwards traffic for pod X that
  arrives on port i out of one fixed port j, the port toward pod X's aggregation switch with
  the same coordinates (plane, number) as the aggregation switch behind port i. The rule's action
  is a fast-failover group [watch j -> output j; else the ECMP select group], so the switch
  itself falls back to hashing while j is down. See :func:`core_rules`.
* ``policy: static`` (DeepSeek Fig. 8, claim C12): every switch sends each destination on one
  fixed port, chosen for a known traffic matrix so that no two of its flows share a link (a
  greedy least-loaded assignment with deterministic restarts); destinations outside the matrix
  get "destination index modulo next hops". See :func:`static_routes`.
* ``policy: adaptive``: flows start on ECMP; the controller learns each TCP flow's path from the
  SYNs every switch copies to it, polls port counters (and the per-flow counters of a rule it puts
  on the flow's first switch), and when an uplink runs hot with two or more elephant flows on it,
  pins one of them, with 5-tuple rules above the /32 routes, onto the least-loaded alternative
  path. See :func:`plan_moves`.

  How this differs from adaptive routing inside a switch (InfiniBand AR, Spectrum-X, the RoCE
  adaptive routing of DeepSeek's Fig. 8): a switch ASIC reads its own egress queue depths and
  chooses per packet (or per flowlet) in nanoseconds, so it can spray one flow over every uplink
  and reacts before a queue builds. Here the control loop is a controller polling counters: a
  decision needs two samples (one poll interval, 0.5 s by default) plus the round trips to install
  the rules, so it reacts in about a second, only to load that lasts that long; it moves whole
  flows (never packets), so a single flow is never faster than its one path and the receiver
  never sees reordering; and every moved flow costs one rule on each switch of its new path
  (plus one counting rule per flow on its first switch), which bounds how many flows it can
  manage. It also only sees flows whose SYN it saw.
"""
from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable, NamedTuple

from testbed.core.errors import ParamError
from testbed.model.fabric import Fabric
from testbed.model.routing import ECMP_MODES, Route, routes_to

POLICIES = ("ecmp", "static", "adaptive")
CORE_MODES = ("per-port", "ecmp")
MAX_HOPS = 16

Link = tuple[str, int]        # a directed link: (switch, egress port)


# ---- options ----------------------------------------------------------------------------------

def default_core(family: str) -> str:
    """HPN's core uses per-port rules (HPN sec. 6); the other families hash at every tier."""
    return "per-port" if family == "hpn" else "ecmp"


def normalize(fabric: Fabric, routing: dict | None) -> dict:
    """The routing options with defaults filled in; ParamError naming a bad one.

    Keys: ecmp (polarized|seeded), core (per-port|ecmp), policy (ecmp|static|adaptive),
    matrix ([[src, dst], ...] NIC references, for static), interval (s, adaptive poll period),
    hot (fraction of a link's rate above which it is hot), elephant (fraction of a link's rate
    from which a flow counts), hold (s a moved flow stays put).
    """
    r = dict(routing or {})
    known = {"ecmp", "core", "policy", "matrix", "interval", "hot", "elephant", "hold"}
    unknown = set(r) - known
    if unknown:
        raise ParamError(f"unknown routing option {sorted(unknown)[0]!r}; known: {', '.join(sorted(known))}")
    r.setdefault("ecmp", "seeded")
    r.setdefault("core", default_core(fabric.family))
    r.setdefault("policy", "ecmp")
    for key, choices in (("ecmp", ECMP_MODES), ("core", CORE_MODES), ("policy", POLICIES)):
        if r[key] not in choices:
            raise ParamError(f"routing {key}={r[key]!r}: choose from {', '.join(choices)}")
    matrix = []
    for pair in r.get("matrix") or []:
        if len(pair) != 2:
            raise ParamError(f"routing matrix entry {pair!r}: expected [src, dst]")
        src, dst = fabric.nic(str(pair[0])), fabric.nic(str(pair[1]))   # ParamError if unknown
        matrix.append([src.ip, dst.ip])
    r["matrix"] = matrix
    if matrix and r["policy"] != "static":
        raise ParamError("a traffic matrix only applies to policy=static")
    for key, default, lo, hi in (("interval", 0.5, 0.05, 60), ("hot", 0.8, 0.05, 1.5),
                                 ("elephant", 0.1, 0.0, 1.0), ("hold", 2.0, 0.0, 600)):
        try:
            value = float(r.get(key, default))
        except (TypeError, ValueError):
            raise ParamError(f"routing {key}={r.get(key)!r}: expected a number") from None
        if not lo <= value <= hi:
            raise ParamError(f"routing {key}={value}: must be between {lo} and {hi}")
        r[key] = value
    return r


# ---- the forwarding state, as a function ------------------------------------------------------

def all_routes(fabric: Fabric, down: frozenset = frozenset()) -> list[Route]:
    """The /32 routes of every NIC, all of its ports attached (what a settled controller holds)."""
    return [r for nic in fabric.nics()
            for r in routes_to(fabric, nic.ip, nic.mac, fabric.attachments(nic), down)]


@dataclass(frozen=True)
class CoreRule:
    """On core `switch`, IPv4 to `ip` arriving on `in_port` leaves on `port`; while `port` is
    down, on the ECMP group over `fallback` (the /32 route's ports)."""
    switch: str
    in_port: int
    ip: str
    port: int
    fallback: tuple[int, ...]


class Hop(NamedTuple):
    switch: str
    in_port: int
    out_port: int


class Forwarding:
    """What the switches do toward each destination: routes, overridden by per-port core rules."""

    def __init__(self, fabric: Fabric, routes: Iterable[Route], core: Iterable[CoreRule] = ()):
        self.fabric = fabric
        self.routes = {(r.switch, r.ip): r for r in routes}
        self.core = {(c.switch, c.in_port, c.ip): c for c in core}
        self.peer = fabric.port_peer()

    def is_switch(self, node: str) -> bool:
        return node in self.fabric.switches

    def choices(self, switch: str, in_port: int, ip: str) -> tuple[int, ...]:
        """The ports a packet to `ip` that entered `switch` on `in_port` may leave on."""
        rule = self.core.get((switch, in_port, ip))
        if rule is not None:
            return (rule.port,)
        route = self.routes.get((switch, ip))
        return route.ports if route else ()

    def delivers(self, switch: str, ip: str) -> bool:
        route = self.routes.get((switch, ip))
        return bool(route and route.deliver_mac)

    def walk(self, switch: str, in_port: int, ip: str,
             pick: Callable[[str, int, tuple[int, ...]], int]) -> list[Hop] | None:
        """Hops from (`switch`, `in_port`) to the switch that delivers `ip`, choosing with
        `pick(switch, in_port, choices)`; None where the walk dead-ends or loops."""
        hops: list[Hop] = []
        for _ in range(MAX_HOPS):
            options = self.choices(switch, in_port, ip)
            if not options:
                return None
            out = options[0] if self.delivers(switch, ip) else pick(switch, in_port, options)
            hops.append(Hop(switch, in_port, out))
            if self.delivers(switch, ip):
                return hops
            node, port = self.peer[(switch, out)]
            if not self.is_switch(node):
                return None
            switch, in_port = node, port
        return None

    def ingress(self, nic) -> tuple[str, int]:
        """Where a NIC's traffic enters the fabric when the host sends on its first port."""
        return self.fabric.attachments(nic)[0]


def switch_links(hops: Iterable[Hop], fwd: Forwarding) -> list[Link]:
    """The directed switch-to-switch links a path uses (host links excluded)."""
    return [(h.switch, h.out_port) for h in hops if fwd.is_switch(fwd.peer[(h.switch, h.out_port)][0])]


# ---- per-port core (C8) -------------------------------------------------------------------------

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


# ---- static per destination (C12) ---------------------------------------------------------------

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
           index: dict[str, int], rng: random.Random | None = None) -> list[Link]:
    """Route every flow toward `dst` on the path whose links carry the fewest flows so far
    (ties: destination index modulo the ports, or at random when `rng` is given), fixing the
    ports it takes for `dst`. Adds the flows to `load`; returns the links they use."""
    used: list[Link] = []
    for src in sources:
        switch, in_port = fwd.ingress(fwd.fabric.nic(src))
        paths = all_paths(fwd, switch, in_port, dst, choice, index[dst])
        if not paths:
            continue

        def cost(path):
            links = switch_links(path, fwd)
            return (sum(1 for l in links if load[l]), sum(load[l] for l in links),
                    rng.random() if rng else 0)
        best = min(paths, key=cost)
        for hop in best:
            if len(fwd.choices(hop.switch, hop.in_port, dst)) > 1:
                choice[(hop.switch, dst)] = hop.out_port
        for link in switch_links(best, fwd):
            load[link] += 1
            used.append(link)
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
        conflicted = sorted(d for d, links in used.items() if any(load[l] > 1 for l in links))
        d = rng.choice(conflicted)
        for link in used[d]:
            load[link] -= 1
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

        def only(sw, in_port, options):
            if len(options) != 1:
                raise ValueError(f"{sw} has {len(options)} choices toward {dst.ip}")
            return options[0]
        paths[(src.ip, dst.ip)] = fwd.walk(switch, in_port, dst.ip, only)
    return paths


def shared_links(fabric: Fabric, paths: dict) -> dict[Link, list]:
    """Directed switch-to-switch links that more than one of `paths` uses."""
    fwd = Forwarding(fabric, [])
    users = defaultdict(list)
    for key, hops in paths.items():
        for link in switch_links(hops or [], fwd):
            users[link].append(key)
    return {link: keys for link, keys in users.items() if len(keys) > 1}


# ---- adaptive ---------------------------------------------------------------------------------

class FiveTuple(NamedTuple):
    src: str
    dst: str
    proto: int
    sport: int
    dport: int


@dataclass
class TrackedFlow:
    """A TCP flow the controller saw a SYN of. `seen`: switch -> port its SYN entered on."""
    key: FiveTuple
    seen: dict[str, int] = field(default_factory=dict)
    hops: list[Hop] | None = None      # its path, once known
    pins: dict[str, int] = field(default_factory=dict)   # switch -> port the controller chose
    moved_at: float = float("-inf")
    rate: float = 0.0                  # Mbit/s, from its counting rule
    last_bytes: int | None = None
    last_time: float | None = None
    active_at: float = 0.0             # when its byte counter last grew (or it was seen)


def ingress_of(fwd: Forwarding, seen: dict[str, int]) -> tuple[str, int] | None:
    """The sighting where the flow entered the fabric (from a host port)."""
    entries = [(sw, p) for sw, p in seen.items() if not fwd.is_switch(fwd.peer[(sw, p)][0])]
    return entries[0] if len(entries) == 1 else None


def path_from_sightings(fwd: Forwarding, dst_ip: str, seen: dict[str, int]) -> list[Hop] | None:
    """The path of a flow from where its SYN was seen: each switch's out port is the port whose
    far end is where the SYN entered the next switch. None while sightings are missing."""
    start = ingress_of(fwd, seen)
    if start is None:
        return None
    entered = {}   # (upstream switch, its out port) -> the switch the SYN entered next
    for sw, p in seen.items():
        node, port = fwd.peer[(sw, p)]
        if fwd.is_switch(node):
            entered[(node, port)] = sw
    hops, switch = [], start[0]
    for _ in range(MAX_HOPS):
        in_port = seen[switch]
        if fwd.delivers(switch, dst_ip):
            hops.append(Hop(switch, in_port, fwd.routes[(switch, dst_ip)].ports[0]))
            return hops
        nxt = [(port, nbr) for (sw, port), nbr in entered.items() if sw == switch]
        if len(nxt) != 1:
            return None
        out, nbr = nxt[0]
        hops.append(Hop(switch, in_port, out))
        switch = nbr
    return None


@dataclass(frozen=True)
class Move:
    key: FiveTuple
    hops: tuple[Hop, ...]
    pins: dict
    at: Link                           # the hot link it left
    score: float                       # the new path's highest utilisation, the flow included


def _reroute(fwd: Forwarding, flow: TrackedFlow, hot: Link, load: dict, capacity: dict,
             rate: float, hot_fraction: float) -> tuple[tuple[int, float], list[Hop], dict] | None:
    """The best path for `flow` avoiding `hot`, diverging at the hot switch or before it.

    Ranked by (hot links the new path keeps, highest utilisation of the links it newly takes
    with the flow added): a path that shares no busy link wins over one that diverges late."""
    hops = flow.hops
    idx = next(i for i, h in enumerate(hops) if (h.switch, h.out_port) == hot)
    old = set(switch_links(hops, fwd))

    def util(link, extra=0.0):
        return (load.get(link, 0.0) + extra) / capacity.get(link, float("inf"))

    def least_loaded(sw, in_port, options):
        return min(options, key=lambda p: (util((sw, p), rate), p))
    best = None
    for h in range(idx, -1, -1):
        hop = hops[h]
        for q in fwd.choices(hop.switch, hop.in_port, flow.key.dst):
            node, port = fwd.peer[(hop.switch, q)]
            if q == hop.out_port or not fwd.is_switch(node):
                continue
            rest = fwd.walk(node, port, flow.key.dst, least_loaded)
            if rest is None:
                continue
            new = hops[:h] + [Hop(hop.switch, hop.in_port, q)] + rest
            links = switch_links(new, fwd)
            if hot in links:
                continue
            kept_hot = sum(1 for l in links if l in old and util(l) >= hot_fraction)
            score = (kept_hot, max([util(l, rate) for l in links if l not in old] + [0.0]))
            if best is None or score < best[0]:
                pins = {x.switch: x.out_port for x in new[:h] if x.switch in flow.pins}
                pins.update({x.switch: x.out_port for x in new[h:]
                             if len(fwd.choices(x.switch, x.in_port, flow.key.dst)) > 1})
                best = (score, new, pins)
    return best


def plan_moves(fwd: Forwarding, flows: dict[FiveTuple, TrackedFlow], port_rate: dict[Link, float],
               capacity: dict[Link, float], now: float, hot: float = 0.8, elephant: float = 0.1,
               hold: float = 2.0) -> list[Move]:
    """Which flows to pin where, this round.

    A link is hot when its measured rate is at least `hot` x its capacity. On a hot link carrying
    two or more elephants (flows at `elephant` x capacity or more, not moved in the last `hold`
    seconds), one elephant moves: the one whose best alternative path keeps the fewest hot links
    and is least loaded, if the links it newly takes stay under `hot` with the flow added. The
    new path may diverge at the hot switch or at any switch before it. Loads are projected as
    moves are planned, so one round never sends two flows onto the same spare link.
    """
    load = dict(port_rate)
    moves: list[Move] = []
    moved: set[FiveTuple] = set()

    def util(link):
        return load.get(link, 0.0) / capacity[link]
    candidates = [l for l in port_rate if l in capacity and fwd.is_switch(fwd.peer[l][0])]
    for link in sorted(candidates, key=lambda l: (-util(l), l)):
        if util(link) < hot:
            continue
        on = [f for f in flows.values() if f.hops and f.key not in moved
              and link in switch_links(f.hops, fwd) and f.rate >= elephant * capacity[link]]
        if len(on) < 2:
            continue
        best = None
        for f in sorted(on, key=lambda f: (f.rate, f.key)):
            if now - f.moved_at < hold:
                continue
            found = _reroute(fwd, f, link, load, capacity, f.rate, hot)
            if found and found[0][1] < hot and (best is None or found[0] < best[0]):
                best = (found[0], f, found[1], found[2])
        if best is None:
            continue
        score, f, new, pins = best
        old, fresh = set(switch_links(f.hops, fwd)), set(switch_links(new, fwd))
        for l in old - fresh:
            load[l] = max(0.0, load.get(l, 0.0) - f.rate)
        for l in fresh - old:
            load[l] = load.get(l, 0.0) + f.rate
        moved.add(f.key)
        moves.append(Move(f.key, tuple(new), pins, link, round(score[1], 3)))
    return moves


def flow_rules(flows: Iterable[TrackedFlow], fwd: Forwarding) -> dict[tuple[str, FiveTuple], int | None]:
    """(switch, 5-tuple) -> pinned port, or None for a counting rule that follows the route.

    Every tracked flow gets a rule on the switch where it enters the fabric (its counters give the
    flow's rate), unless that switch delivers it; pinned flows get one on every pinned switch."""
    rules: dict[tuple[str, FiveTuple], int | None] = {}
    for f in flows:
        entry = ingress_of(fwd, f.seen)
        if entry and not fwd.delivers(entry[0], f.key.dst):
            rules[(entry[0], f.key)] = f.pins.get(entry[0])
        for sw, port in f.pins.items():
            rules[(sw, f.key)] = port
    return rules


def link_capacity(fabric: Fabric) -> dict[Link, float]:
    """Emulated rate (Mbit/s) of each switch egress port."""
    cap = {}
    for l in fabric.links:
        cap[(l.b, l.b_port)] = fabric.link_mbit(l)
        if l.a in fabric.switches:
            cap[(l.a, l.a_port)] = fabric.link_mbit(l)
    return cap


def update_rate(flow: TrackedFlow, byte_count: int, now: float) -> None:
    """Fold one counter sample into the flow's rate (a reset counter starts over)."""
    if flow.last_bytes is not None and flow.last_time is not None and now > flow.last_time \
            and byte_count >= flow.last_bytes:
        flow.rate = (byte_count - flow.last_bytes) * 8 / 1e6 / (now - flow.last_time)
        if byte_count > flow.last_bytes:
            flow.active_at = now
    flow.last_bytes, flow.last_time = byte_count, now


def prune(flows: dict[FiveTuple, TrackedFlow], fwd: Forwarding, down: frozenset, now: float,
          idle: float = 10.0) -> list[FiveTuple]:
    """Forget flows idle for `idle` seconds and flows whose path uses a port now down (they
    fall back to the routes, which already avoid it). Returns the keys dropped."""
    dropped = []
    for key, f in list(flows.items()):
        dead = f.hops and any((h.switch, h.out_port) in down or (h.switch, h.in_port) in down
                              for h in f.hops)
        dead = dead or any((sw, p) in down for sw, p in f.pins.items())
        if dead or now - f.active_at > idle:
            del flows[key]
            dropped.append(key)
    return dropped
