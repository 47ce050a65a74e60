"""The controller's side of the adaptive policy: which TCP flows exist, where they go, how fast.

It learns each flow's path from the SYNs every switch copies to the controller, keeps port
rates from port counters and flow rates from the counting rule on each flow's first switch,
and asks testbed.model.policies.plan_moves which flows to pin where. No OpenFlow here: the app
feeds it what it hears and pushes the per-flow rules it wants.
"""
from __future__ import annotations

from testbed.model import policies

FLOW_IDLE_S = 10.0


class AdaptiveFlows:
    def __init__(self, fabric, policy: dict):
        self.policy = policy
        self.flows: dict[policies.FiveTuple, policies.TrackedFlow] = {}
        self.capacity = policies.link_capacity(fabric)
        self.port_samples: dict[tuple[str, int], tuple[float, int]] = {}
        self.port_rate: dict[tuple[str, int], float] = {}
        self.moves: list[dict] = []

    def on_syn_or_end(self, switch: str, in_port: int, key, syn: bool, end: bool, now: float) -> bool:
        """A copied TCP SYN, FIN or RST seen entering `switch` on `in_port`; True if the flow
        rules change."""
        if end:
            return self.flows.pop(key, None) is not None
        if not syn:
            return False
        flow = self.flows.get(key)
        if flow is None:
            flow = self.flows[key] = policies.TrackedFlow(key, active_at=now)
        if flow.pins or flow.seen.get(switch) == in_port:
            return False   # a placed flow stays where the controller put it
        flow.seen[switch] = in_port
        flow.hops = None
        return True

    def on_port_stats(self, switch: str, body, now: float) -> None:
        for stat in body:
            key = (switch, stat.port_no)
            if key not in self.capacity:
                continue
            last = self.port_samples.get(key)
            if last and now > last[0] and stat.tx_bytes >= last[1]:
                self.port_rate[key] = (stat.tx_bytes - last[1]) * 8 / 1e6 / (now - last[0])
            self.port_samples[key] = (now, stat.tx_bytes)

    def on_flow_stats(self, switch: str, body, fwd, now: float) -> None:
        for stat in body:
            m = stat.match
            try:
                key = policies.FiveTuple(m["ipv4_src"], m["ipv4_dst"], 6, m["tcp_src"], m["tcp_dst"])
            except KeyError:
                continue
            flow = self.flows.get(key)
            entry = flow and policies.ingress_of(fwd, flow.seen)
            if entry and entry[0] == switch and stat.stats is not None:
                policies.update_rate(flow, dict(stat.stats.fields)["byte_count"], now)

    def prune(self, fwd, down: frozenset, now: float) -> bool:
        return bool(policies.prune(self.flows, fwd, down, now, FLOW_IDLE_S))

    def plan(self, fwd, now: float, log) -> bool:
        """Place each flow's path, move flows off hot links; True if the flow rules change."""
        for flow in self.flows.values():
            if flow.hops is None:
                flow.hops = policies.path_from_sightings(fwd, flow.key.dst, flow.seen)
        p = self.policy
        moves = policies.plan_moves(fwd, self.flows, self.port_rate, self.capacity, now,
                                    p["hot"], p["elephant"], p["hold"])
        for m in moves:
            flow = self.flows[m.key]
            flow.hops, flow.pins, flow.moved_at = list(m.hops), dict(m.pins), now
            record = {"flow": list(m.key), "from": list(m.at), "pins": m.pins, "score": m.score,
                      "rate_mbps": round(flow.rate, 3), "t": round(now, 3)}
            self.moves = self.moves[-199:] + [record]
            log("adaptive move %s", record)
        return bool(moves)

    def wanted(self, fwd) -> dict[tuple, object]:
        """Per-flow rules: a pinned port (int), or the route to follow (a counting rule)."""
        wanted = {}
        for (sw, key), port in policies.flow_rules(self.flows.values(), fwd).items():
            route = fwd.routes.get((sw, key.dst))
            if route is not None:
                wanted[("flow", sw, key)] = port if port is not None else route
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
