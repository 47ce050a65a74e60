"""The controller's rule state, without OpenFlow (os-ken is controller/app.py's, the encoding
controller/switch.py's): as Faucet's valve is to its Ryu shim.

One RuleState holds what the controller knows of the fabric (connected switches, learned NICs,
ports down, isolated switches) and of its rules (wanted per NIC, installed per switch). Each
event is one method call; those that change switches return the messages to send, as plain
data (Reset, Install, Remove, PollPorts, PollFlows) keyed by the rule keys of
testbed/model/contract.py. Nothing here depends on which policy runs: the policy object
(testbed.model.policies, chosen by the run's routing options) computes the routes and answers
the hooks.

Events only mark what went stale; `settle`, which the app calls a little later, recomputes the
stale NICs' rules (only those: routes toward one NIC do not depend on another's) and sends the
difference, so a burst of announcements or port changes costs one computation per NIC, not one
of the whole fabric per event:
- switch up: wipe it, install the classifying table, then every rule it should hold; switch
  down: what it held went with it (a reconnect is both, the old connection down first);
- a gratuitous ARP from a NIC: learn ip -> (mac, the switch ports it announced itself on);
  that NIC's rules go stale;
- port down or up (a fabric port's carrier changed): every NIC's rules go stale, and at the
  settle a switch with every port down is isolated: its rule changes wait until a port is back
  (a failed ToR of a segment would otherwise take 1,088 route deletions and as many additions
  at its repair, which a userspace datapath works through slowly);
- a policy's tracker (its samples, counters, each poll interval's `tick`): the per-flow rules
  it wants replace those installed.
"""
from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from testbed.model import families, policies
from testbed.model.contract import ControllerStatus, CoreKey, FlowKey, Port, RouteKey, RuleKey
from testbed.model.fabric import GATEWAY_IP, Fabric
from testbed.model.routing import routes_to

LOG = logging.getLogger(__name__)


# ---- what to send: plain data, each for one `switch` (sent by controller/ofmsgs.py) ----
class Reset(NamedTuple):
    """Wipe `switch`, then install its classifying table with the policy's `samples`; `beside`:
    a user's app runs beside ours and owns table 2 and on."""
    switch: str
    samples: tuple[policies.Sample, ...]
    beside: bool


class Install(NamedTuple):
    """Install (or overwrite) the rule `key` with `value`."""
    key: RuleKey
    value: object

    @property
    def switch(self) -> str:
        return self.key.switch


class Remove(NamedTuple):
    key: RuleKey

    @property
    def switch(self) -> str:
        return self.key.switch


class PollPorts(NamedTuple):
    """Ask `switch` for its port counters (for a policy's tracker)."""
    switch: str


class PollFlows(NamedTuple):
    """Ask `switch` for the counters of its per-flow rules (for a policy's tracker)."""
    switch: str


Message = Reset | Install | Remove | PollPorts | PollFlows


@dataclass
class Host:
    """A learned NIC: its MAC and the switch ports it announced itself on."""
    mac: str
    at: set[Port] = field(default_factory=set)


def fabric_ports(fabric: Fabric) -> dict[str, set[Port]]:
    """Every switch's ports that the fabric wires (to a switch or a NIC)."""
    ports: dict[str, set[Port]] = {sw: set() for sw in fabric.switches}
    for link in fabric.links:
        ports[link.b].add((link.b, link.b_port))
        if link.a in ports:
            ports[link.a].add((link.a, link.a_port))
    return ports


class RuleState:
    def __init__(self, fabric: Fabric, routing: policies.Routing, beside: bool = False,
                 log: logging.Logger = LOG):
        self.fabric, self.routing, self.beside, self.log = fabric, routing, beside, log
        self.working: Callable[[], None] = lambda: None   # said per NIC computed (controller/heartbeat.py)
        policy, opts = routing.policy, routing.options
        self.samples = tuple(policy.samples(opts))
        self.tracker = policy.tracker(fabric, opts)
        self.connected: set[str] = set()
        self.lost: list[str] = []                    # switches whose connection dropped
        self.learned: dict[str, Host] = {}           # ip -> the NIC
        self.down: set[Port] = set()
        self.ports = fabric_ports(fabric)
        self.isolated: set[str] = set()              # switches with every port down
        self.wanted: dict[str, dict[RuleKey, object]] = {}   # ip -> its route and core rules
        self.installed: dict[RuleKey, object] = {}            # on connected switches
        self.stale: set[str] = set()
        self.stale_all = False
        self._fwd: policies.Forwarding | None = None
        self._out: list[Message] = []

    @classmethod
    def from_spec(cls, spec: dict, log: logging.Logger = LOG) -> RuleState:
        """The state of the run whose controller spec (JSON, written by the testbed) is `spec`."""
        fabric = families.from_spec(spec)
        if spec.get("policy_file"):   # a policy defined outside the testbed (registry.py)
            policies.load_file(spec["policy_file"], spec.get("policy_sha256") or "")
        # a user's app runs beside ours: tables 2 and on are its (testbed/emulation/control/apps.py)
        beside = bool((spec.get("controller_app") or {}).get("beside"))
        return cls(fabric, policies.normalize(fabric, spec.get("routing", {})), beside, log)

    @property
    def settled(self) -> bool:
        """Nothing waits to be recomputed (else the app should call `settle` soon)."""
        return not (self.stale or self.stale_all)

    # ---- connections ----
    def switch_up(self, name: str) -> list[Message]:
        """`name` connected: wipe it, then every rule it should hold."""
        self._forget(name)
        self.connected.add(name)
        self._out.append(Reset(name, self.samples, self.beside))
        for rules in self.wanted.values():
            for key, value in rules.items():
                if key.switch == name:
                    self._put(key, value)
        self._push_flows()
        return self._drain()

    def switch_down(self, name: str) -> None:
        """`name`'s connection dropped (or a new one replaces it): its rules went with it."""
        self.connected.discard(name)
        self._forget(name)
        self.lost.append(name)

    def _forget(self, name: str) -> None:
        self.installed = {k: v for k, v in self.installed.items() if k.switch != name}

    # ---- events that make rules stale ----
    def arp(self, switch: str, port: int, src_ip: str, src_mac: str, dst_ip: str) -> None:
        """An ARP packet from `switch` `port`: a gratuitous one (a NIC announces itself) is
        learned; a new port or MAC makes that NIC's rules stale."""
        if src_ip != dst_ip or src_ip == GATEWAY_IP:
            return
        host = self.learned.setdefault(src_ip, Host(src_mac))
        if (switch, port) in host.at and host.mac == src_mac:
            return
        host.mac = src_mac
        host.at.add((switch, port))
        self.log.info("learned %s at %s port %d", src_ip, switch, port)
        self.stale.add(src_ip)

    def port_state(self, switch: str | None, port_no: int, dead: bool) -> None:
        """A port's carrier as its switch reported it; a change of a fabric port makes every
        NIC's rules stale. Ports the fabric does not wire (the bridge's own, a user's) and
        switches not known (None) change nothing."""
        port = (switch, port_no)
        if port not in self.ports.get(switch, ()) or dead == (port in self.down):
            return
        (self.down.add if dead else self.down.discard)(port)
        self.log.info("port %s %d %s", switch, port_no, "down" if dead else "up")
        self.stale_all = True

    # ---- recomputing ----
    def settle(self, now: float) -> list[Message]:
        """Recompute what went stale (every NIC after a port change, or always for a
        whole-fabric policy); send the difference."""
        everything = self.stale_all or self.routing.policy.whole_fabric
        ips = list(self.learned) if everything else sorted(self.stale)
        ports_changed = self.stale_all
        self.stale, self.stale_all = set(), False
        was_isolated = self.isolated
        if ports_changed:   # not on every learned NIC: a pass over every port of the fabric
            self.isolated = {sw for sw, ports in self.ports.items() if ports and ports <= self.down}
        for ip, rules in self.compute(ips).items():
            self._replace(ip, rules)
        self._drop_unwanted(was_isolated - self.isolated)
        self._fwd = None
        if self.tracker is not None:
            self.tracker.prune(self.fwd, frozenset(self.down), now)
            self._push_flows()
        return self._drain()

    def compute(self, ips: list[str]) -> dict[str, dict[RuleKey, object]]:
        """The route and core rules of each NIC in `ips`, as the routing options say."""
        down = frozenset(self.down)
        routes = []
        for ip in ips:      # the long part of a whole fabric's settle: each NIC says we progress
            routes += routes_to(self.fabric, ip, self.learned[ip].mac, self.learned[ip].at, down)
            self.working()
        core = self.routing.core_rules(self.fabric, routes)
        routes = self.routing.routes(self.fabric, routes, core)
        rules: dict[str, dict[RuleKey, object]] = {ip: {} for ip in ips}
        for r in routes:
            rules[r.ip][RouteKey(r.switch, r.ip)] = r
        for c in core:
            rules[c.ip][CoreKey(c.switch, c.in_port, c.ip)] = c
        return rules

    def _replace(self, ip: str, rules: dict[RuleKey, object]) -> None:
        """Make `ip`'s rules on the switches `rules`: install what changed, delete what went."""
        for key in self.wanted.get(ip, {}).keys() - rules.keys():
            self._take(key)
        for key, value in rules.items():
            self._put(key, value)
        self.wanted[ip] = rules

    def _drop_unwanted(self, switches: set[str]) -> None:
        """Remove from `switches` (back from isolation) the route and core rules that went
        unwanted while their removal waited."""
        if not switches:
            return
        wanted = {k for rules in self.wanted.values() for k in rules if k.switch in switches}
        for key in [k for k in self.installed if k.switch in switches
                    and not isinstance(k, FlowKey) and k not in wanted]:
            self._take(key)

    def _put(self, key: RuleKey, value: object) -> None:
        if key.switch in self.connected and key.switch not in self.isolated \
                and self.installed.get(key) != value:
            self._out.append(Install(key, value))
            self.installed[key] = value

    def _take(self, key: RuleKey) -> None:
        if key.switch in self.isolated:
            return   # it stays until the switch is back (_drop_unwanted)
        if key.switch in self.connected and key in self.installed:
            self._out.append(Remove(key))
        self.installed.pop(key, None)

    def _drain(self) -> list[Message]:
        out, self._out = self._out, []
        return out

    # ---- a policy's tracker ----
    @property
    def fwd(self) -> policies.Forwarding:
        """Every switch's forwarding toward every NIC (built when a tracker asks)."""
        if self._fwd is None:
            rules = [(k, v) for r in self.wanted.values() for k, v in r.items()]
            self._fwd = policies.Forwarding(self.fabric, [v for k, v in rules if isinstance(k, RouteKey)],
                                            [v for k, v in rules if isinstance(k, CoreKey)])
        return self._fwd

    def _push_flows(self) -> None:
        """Per-flow rules as the policy's tracker wants them."""
        if self.tracker is None:
            return
        wanted = self.tracker.wanted(self.fwd)
        for key in [k for k in self.installed if isinstance(k, FlowKey) and k not in wanted]:
            self._take(key)
        for key, value in wanted.items():
            self._put(key, value)

    def tcp_sample(self, switch: str, in_port: int, key: policies.FiveTuple, tcp_flags: int,
                   now: float) -> list[Message]:
        """A TCP segment the policy samples, copied to the controller as it entered `switch`."""
        if self.tracker is not None and self.tracker.on_sample(switch, in_port, key, tcp_flags, now):
            self._push_flows()
        return self._drain()

    def tick(self, now: float) -> list[Message]:
        """A tracker's poll interval: ask every switch for its counters (port counters, and
        per-flow ones where it holds per-flow rules); let the tracker plan."""
        if self.tracker is None:
            return []
        with_flows = {k.switch for k in self.installed if isinstance(k, FlowKey)}
        polls: list[Message] = [PollPorts(sw) for sw in sorted(self.connected)]
        polls += [PollFlows(sw) for sw in sorted(self.connected & with_flows)]
        dropped = self.tracker.prune(self.fwd, frozenset(self.down), now)
        if self.tracker.plan(self.fwd, now, self.log.info) or dropped:
            self._push_flows()
        return polls + self._drain()

    def port_counters(self, switch: str, counters: list[tuple[int, int]], now: float) -> None:
        """(port, tx_bytes) of each port of `switch`, for the tracker."""
        if self.tracker is not None:
            self.tracker.on_port_counters(switch, counters, now)

    def flow_counters(self, switch: str, counters: list[tuple[policies.FiveTuple, int]], now: float) -> None:
        """(5-tuple, byte count) of each per-flow rule of `switch`, for the tracker."""
        if self.tracker is not None:
            self.tracker.on_flow_counters(switch, counters, self.fwd, now)

    # ---- status ----
    def status(self) -> ControllerStatus:
        """The record of testbed/model/contract.py."""
        installed = Counter(k.kind for k in self.installed)
        return ControllerStatus(
            connected=tuple(sorted(self.connected)), lost=tuple(self.lost),
            learned={ip: tuple(sorted(h.at)) for ip, h in self.learned.items()},
            down=tuple(sorted(self.down)), policy=self.routing.to_json(),
            routes=installed["route"], core_rules=installed["core"],
            # every rule the controller keeps on a switch regardless of traffic
            routes_per_switch=dict(Counter(k.switch for k in self.installed if not isinstance(k, FlowKey))),
            isolated=tuple(sorted(self.isolated)),   # their rules wait for a port to come back
            settled=self.settled,
            tracker=None if self.tracker is None else self.tracker.status(installed["flow"]))
