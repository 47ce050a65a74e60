"""What a routing policy is: one object that answers everything the testbed and the controller
ask of a policy, so that neither tests a policy's name.

A policy (a RoutingPolicy subclass, one module under testbed/model/policies/, registered in
__init__.py or with register() from a user's file) declares:

* its typed options (Number, NicPairs: name, default, bounds, help), which the `routing`
  options of a run are checked against (options.py), and the fabrics it refuses (`refuses`);
* `routes`: the route computation, from the /32 routes of testbed.model.routing (every
  next hop a switch has toward a NIC) to the ones the switches get (a policy chooses among
  those next hops; it never invents a port);
* the controller's hooks, in the manner of Faucet's valve hooks: they return pure rule
  descriptions (Sample, the per-flow rules of a Tracker) that controller/switch.py encodes as
  OpenFlow, never OpenFlow messages themselves:
  `samples`: which packets every switch copies to the controller (table 0);
  `tracker`: the policy's state in the controller, for a policy that reacts to traffic (fed
  the samples, port counters and per-flow counters; asked for per-flow rules);
  `whole_fabric`: whether routes toward one NIC depend on the others' (then any change
  recomputes every NIC's, not just the stale ones).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from testbed.core.errors import ParamError
from testbed.model.contract import FlowKey
from testbed.model.fabric import Fabric
from testbed.model.routing import Route


class FiveTuple(NamedTuple):
    src: str
    dst: str
    proto: int
    sport: int
    dport: int


@dataclass(frozen=True)
class Number:
    """A numeric option: a number in [lo, hi], `default` when not given."""
    name: str
    default: float
    lo: float
    hi: float
    help: str

    def parse(self, fabric: Fabric, value: object) -> float:
        try:
            number = float(value)   # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ParamError(f"routing {self.name}={value!r}: expected a number") from None
        if not self.lo <= number <= self.hi:   # (NaN compares false)
            raise ParamError(f"routing {self.name}={number}: must be between {self.lo} and {self.hi}")
        return number

    def malformed(self) -> str | None:
        values = (self.default, self.lo, self.hi)
        if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
            return "default and bounds must be finite numbers"
        return None if self.lo <= self.default <= self.hi else "default outside its bounds"


@dataclass(frozen=True)
class NicPairs:
    """A list of [src, dst] NIC references (IP, host-nI or host): a traffic matrix, parsed to
    [[src ip, dst ip], ...]; empty when not given."""
    name: str
    help: str
    default: tuple = ()

    def parse(self, fabric: Fabric, value: object) -> list[list[str]]:
        if not isinstance(value, (list, tuple)):
            raise ParamError(f"routing {self.name}: expected [[src, dst], ...]")
        pairs = []
        for pair in value:
            if not isinstance(pair, (list, tuple)) or len(pair) != 2 or \
                    not all(isinstance(x, str) for x in pair):
                raise ParamError(f"routing {self.name} entry {str(pair)[:60]}: expected [src, dst] NIC names")
            try:
                src, dst = fabric.nic(pair[0]), fabric.nic(pair[1])
            except ParamError as e:
                raise ParamError(f"routing {self.name}: {e}") from None
            if src == dst:
                raise ParamError(f"routing {self.name} entry {pair[0]},{pair[1]}: "
                                 "a flow from a NIC to itself")
            pairs.append([src.ip, dst.ip])
        return pairs

    def malformed(self) -> str | None:
        return None


Option = Number | NicPairs


@dataclass(frozen=True)
class Sample:
    """A table-0 rule: every switch copies the first `bytes` bytes of packets matching `match`
    (OXM field name -> value, or (value, mask)) to the controller, and forwards them as usual."""
    match: dict
    bytes: int = 128


class Tracker:
    """A policy's state in the controller, for a policy that reacts to traffic. The app feeds it
    (samples, counters every `interval` seconds) and installs what `wanted` returns; each hook
    that returns a bool says whether the per-flow rules changed."""
    interval: float = 1.0

    def on_sample(self, switch: str, in_port: int, key: FiveTuple, tcp_flags: int, now: float) -> bool:
        return False

    def on_port_counters(self, switch: str, counters: Iterable[tuple[int, int]], now: float) -> None:
        """(port, tx_bytes) of each port of `switch`."""

    def on_flow_counters(self, switch: str, counters: Iterable[tuple[FiveTuple, int]], fwd,
                         now: float) -> None:
        """(5-tuple, byte count) of each per-flow rule (FLOW_COOKIE) of `switch`."""

    def prune(self, fwd, down: frozenset, now: float) -> bool:
        return False

    def plan(self, fwd, now: float, log: Callable) -> bool:
        return False

    def wanted(self, fwd) -> dict[FlowKey, object]:
        """Per-flow rules: FlowKey(switch, FiveTuple) -> an output port, or the Route to follow
        (a rule that only counts)."""
        return {}

    def status(self, flow_rules: int) -> dict:
        return {}


class RoutingPolicy:
    """Subclass it: set name, summary and options; override the hooks the policy needs."""
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""           # one line, for --help and errors
    options: ClassVar[tuple[Option, ...]] = ()
    whole_fabric: ClassVar[bool] = False

    def refuses(self, fabric: Fabric) -> str | None:
        """Why this policy cannot route `fabric` (a run naming it is refused), or None."""
        return None

    def routes(self, fabric: Fabric, routes: list[Route], core: list, opts: dict) -> list[Route]:
        """The routes the switches get, from every NIC's /32 routes (with all their next hops)
        and the core rules in force; `opts` are this policy's options, parsed."""
        return list(routes)

    def samples(self, opts: dict) -> tuple[Sample, ...]:
        return ()

    def tracker(self, fabric: Fabric, opts: dict) -> Tracker | None:
        return None
