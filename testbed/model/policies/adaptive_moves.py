"""The adaptive policy's planning (the policy and its state in the controller: adaptive.py).

Flows start on ECMP; the controller learns each TCP flow's path from the SYNs every switch
copies to it, polls port counters (and the per-flow counters of a rule it puts on the
flow's first switch), and when an uplink runs hot with two or more elephant flows on it, pins one
of them, with 5-tuple rules above the /32 routes, onto the least-loaded alternative path.

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

from collections.abc import Iterable
from dataclasses import dataclass, field

from testbed.model.fabric import Fabric, Port
from testbed.model.paths import Hop, LoopError, walk
from testbed.model.policies.base import FiveTuple
from testbed.model.policies.forwarding import Forwarding, switch_links


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


def ingress_of(fwd: Forwarding, seen: dict[str, int]) -> Port | None:
    """The sighting where the flow entered the fabric (from a host port)."""
    entries = [(sw, p) for sw, p in seen.items() if not fwd.is_switch(fwd.peer[(sw, p)][0])]
    return entries[0] if len(entries) == 1 else None


def path_from_sightings(fwd: Forwarding, dst_ip: str, seen: dict[str, int]) -> list[Hop] | None:
    """The path of a flow from where its SYN was seen: each switch's out port is the port whose
    far end is where the SYN entered the next switch. None while sightings are missing."""
    start = ingress_of(fwd, seen)
    if start is None:
        return None
    toward_sighting = set()   # (upstream switch, its out port) behind which the SYN was seen
    for sw, p in seen.items():
        node, port = fwd.peer[(sw, p)]
        if fwd.is_switch(node):
            toward_sighting.add((node, port))

    def out_port(switch: str, in_port: int) -> int | None:
        if fwd.delivers(switch, dst_ip):
            return fwd.routes[(switch, dst_ip)].ports[0]
        nxt = [port for sw, port in toward_sighting if sw == switch]
        return nxt[0] if len(nxt) == 1 else None
    try:
        hops = walk(fwd.fabric, (start[0], seen[start[0]]), out_port, fwd.peer)
    except LoopError:
        return None
    return hops if fwd.delivers(hops[-1].switch, dst_ip) else None


@dataclass(frozen=True)
class Move:
    key: FiveTuple
    hops: tuple[Hop, ...]
    pins: dict
    at: Port                           # the hot egress port it left
    score: float                       # the new path's highest utilisation, the flow included


def _reroute(fwd: Forwarding, flow: TrackedFlow, hot: Port, load: dict, capacity: dict,
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


def plan_moves(fwd: Forwarding, flows: dict[FiveTuple, TrackedFlow], port_rate: dict[Port, float],
               capacity: dict[Port, float], now: float, hot: float = 0.8, elephant: float = 0.1,
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


def link_capacity(fabric: Fabric) -> dict[Port, float]:
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

