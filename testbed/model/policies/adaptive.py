"""Adaptive (`policy: adaptive`): flows start on ECMP; the controller moves an elephant off a
hot link onto the least-loaded alternative path (the planning: adaptive_moves.py).

The policy asks every switch to copy TCP SYN, FIN and RST segments to the controller, and its
tracker (AdaptiveFlows, the policy's state in the controller) learns each flow's path from the
SYNs, keeps port rates from port counters and flow rates from the counting rule on each flow's
first switch, and says which flows to pin where. No OpenFlow here: the app feeds it what it
hears (as plain numbers) and pushes the per-flow rules it wants.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from testbed.model.contract import FlowKey
from testbed.model.fabric import Fabric
from testbed.model.policies.adaptive_moves import (
    TrackedFlow,
    flow_rules,
    ingress_of,
    link_capacity,
    path_from_sightings,
    plan_moves,
    prune,
    update_rate,
)
from testbed.model.policies.base import FiveTuple, Number, RoutingPolicy, Sample, Tracker

TCP_FIN, TCP_SYN, TCP_RST = 0x01, 0x02, 0x04
SAMPLE_BYTES = 128        # enough of a copied segment for its IPv4 and TCP headers
FLOW_IDLE_S = 10.0        # a flow whose counter has not grown for this long is forgotten


class Adaptive(RoutingPolicy):
    name = "adaptive"
    summary = "flows start on ECMP; the controller moves an elephant off a hot link"
    options = (Number("interval", 0.5, 0.05, 60, "s between counter polls"),
               Number("hot", 0.8, 0.05, 1.5, "fraction of a link's rate above which it is hot"),
               Number("elephant", 0.1, 0.0, 1.0, "fraction of a link's rate from which a flow counts"),
               Number("hold", 2.0, 0.0, 600, "s a moved flow stays put"))

    def samples(self, opts: dict) -> tuple[Sample, ...]:
        return tuple(Sample({"eth_type": 0x0800, "ip_proto": 6, "tcp_flags": (flag, flag)}, SAMPLE_BYTES)
                     for flag in (TCP_SYN, TCP_FIN, TCP_RST))

    def tracker(self, fabric: Fabric, opts: dict) -> AdaptiveFlows:
        return AdaptiveFlows(fabric, opts)


class AdaptiveFlows(Tracker):
    """Which TCP flows exist, where they go, how fast; which to pin where."""

    def __init__(self, fabric: Fabric, opts: dict):
        self.opts = opts
        self.interval = opts["interval"]
        self.flows: dict[FiveTuple, TrackedFlow] = {}
        self.capacity = link_capacity(fabric)
        self.port_samples: dict[tuple[str, int], tuple[float, int]] = {}
        self.port_rate: dict[tuple[str, int], float] = {}
        self.moves: list[dict] = []

    def on_sample(self, switch: str, in_port: int, key: FiveTuple, tcp_flags: int, now: float) -> bool:
        """A copied TCP SYN, FIN or RST seen entering `switch` on `in_port`."""
        if tcp_flags & (TCP_FIN | TCP_RST):
            return self.flows.pop(key, None) is not None
        if not tcp_flags & TCP_SYN:
            return False
        flow = self.flows.get(key)
        if flow is None:
            flow = self.flows[key] = TrackedFlow(key, active_at=now)
        if flow.pins or flow.seen.get(switch) == in_port:
            return False   # a placed flow stays where the controller put it
        flow.seen[switch] = in_port
        flow.hops = None
        return True

    def on_port_counters(self, switch: str, counters: Iterable[tuple[int, int]], now: float) -> None:
        for port, tx_bytes in counters:
            key = (switch, port)
            if key not in self.capacity:
                continue
            last = self.port_samples.get(key)
            if last and now > last[0] and tx_bytes >= last[1]:
                self.port_rate[key] = (tx_bytes - last[1]) * 8 / 1e6 / (now - last[0])
            self.port_samples[key] = (now, tx_bytes)

    def on_flow_counters(self, switch: str, counters: Iterable[tuple[FiveTuple, int]], fwd,
                         now: float) -> None:
        for key, byte_count in counters:
            flow = self.flows.get(key)
            entry = flow and ingress_of(fwd, flow.seen)
            if entry and entry[0] == switch:
                update_rate(flow, byte_count, now)

    def prune(self, fwd, down: frozenset, now: float) -> bool:
        return bool(prune(self.flows, fwd, down, now, FLOW_IDLE_S))

    def plan(self, fwd, now: float, log: Callable) -> bool:
        """Place each flow's path, move flows off hot links."""
        for flow in self.flows.values():
            if flow.hops is None:
                flow.hops = path_from_sightings(fwd, flow.key.dst, flow.seen)
        o = self.opts
        moves = plan_moves(fwd, self.flows, self.port_rate, self.capacity, now, o["hot"], o["elephant"],
                           o["hold"])
        for m in moves:
            flow = self.flows[m.key]
            flow.hops, flow.pins, flow.moved_at = list(m.hops), dict(m.pins), now
            record = {"flow": list(m.key), "from": list(m.at), "pins": m.pins, "score": m.score,
                      "rate_mbps": round(flow.rate, 3), "t": round(now, 3)}
            self.moves = self.moves[-199:] + [record]
            log("adaptive move %s", record)
        return bool(moves)

    def wanted(self, fwd) -> dict[FlowKey, object]:
        """A pinned port (int) where the flow is pinned, else the route to follow (counting)."""
        wanted = {}
        for (sw, key), port in flow_rules(self.flows.values(), fwd).items():
            route = fwd.routes.get((sw, key.dst))
            if route is not None:
                wanted[FlowKey(sw, key)] = port if port is not None else route
        return wanted

    def status(self, flow_rules: int) -> dict:
        cap = self.capacity
        return {
            "flows": len(self.flows),
            "pinned": sum(1 for f in self.flows.values() if f.pins),
            "flow_rules": flow_rules,
            "moves": self.moves[-50:],
            "busy_links": {f"{sw}:{port}": round(rate / cap[(sw, port)], 3)
                           for (sw, port), rate in sorted(self.port_rate.items())
                           if rate >= 0.5 * cap[(sw, port)]},
            "flow_rates": {":".join(map(str, k)): round(f.rate, 3) for k, f in self.flows.items()},
        }


POLICY = Adaptive()
