"""The forwarding state as a function: what every switch does toward each destination, given
the /32 routes and the per-port core rules, and the paths a packet can take through it."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from testbed.model.fabric import Fabric, Port
from testbed.model.paths import Hop, LoopError, walk
from testbed.model.routing import Route, routes_to


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
        """Hops from (`switch`, `in_port`) to the switch that delivers `ip` (paths.walk over the
        computed routes), choosing with `pick(switch, in_port, choices)` where a switch has
        several; None where the walk dead-ends or loops."""
        def out_port(sw: str, port: int) -> int | None:
            options = self.choices(sw, port, ip)
            if not options:
                return None
            return options[0] if self.delivers(sw, ip) else pick(sw, port, options)
        try:
            hops = walk(self.fabric, (switch, in_port), out_port, self.peer)
        except LoopError:
            return None
        return hops if self.delivers(hops[-1].switch, ip) else None

    def ingress(self, nic) -> Port:
        """Where a NIC's traffic enters the fabric when the host sends on its first port."""
        return self.fabric.attachments(nic)[0]


def switch_links(hops: Iterable[Hop], fwd: Forwarding) -> list[Port]:
    """The egress ports of a path toward another switch: one per directed switch-to-switch link
    it uses (host links excluded)."""
    return [(h.switch, h.out_port) for h in hops if fwd.is_switch(fwd.peer[(h.switch, h.out_port)][0])]
