"""The controller contract: what the controller (controller/, its own process) and the testbed
agree on across the process boundary.

* The switches' pipeline the controller programs and the testbed reads back (ovs-ofctl dumps,
  `routes` in the CLI, traces): table numbers, rule priorities, the cookie of per-flow rules.
* The rule keys: what names each rule the controller keeps in table 1 (RouteKey, CoreKey,
  FlowKey), from the policies that compute them (a Tracker's per-flow rules) to the OpenFlow
  encoding (controller/switch.py).
* The probe ethertype: frames of it are wiring probes (testbed/measure/wiring.py), which every
  switch reports to the controller where they came in and forwards no further.
* The status record the controller writes to the run's status file (controller/rulestate.py)
  and the testbed polls (testbed/emulation/build.py, watchdog.py): ControllerStatus, as JSON.

Pure: constants, the rule keys and one dataclass, importable from the controller and from every
layer of the testbed.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import NamedTuple

# ---- pipeline ----
TABLE_CLASSIFY, TABLE_FORWARD = 0, 1
# a user's app beside ours (testbed/emulation/control/apps.py) owns table 2 and on: what
# table 1 does not route goes there (a miss rule, only then); tables 0 and 1 and groups are ours
TABLE_USER = 2
# table 0 (classify): what goes to the controller, the rest on to table 1
PRIO_PROBE, PRIO_GATEWAY_ARP, PRIO_ARP, PRIO_SAMPLE, PRIO_MISS = 1200, 1100, 1000, 900, 0
# table 1 (forward): /32 routes, per-port core rules above them, per-flow pins above both
PRIO_ROUTE, PRIO_CORE, PRIO_PINNED = 500, 550, 600
FLOW_COOKIE = 0x5EED_F10E          # marks per-flow rules (their counters are polled by cookie)
PROBE_ETHERTYPE = 0x88B5           # IEEE local experimental: the wiring check's probes (postcards)

Port = tuple[str, int]             # (switch, OpenFlow port)


# ---- rule keys: one rule of table 1 each (tuples: cheap to hash by the ten thousand; their
# shapes differ, so keys of two kinds never compare equal) ----
class RouteKey(NamedTuple):
    """The /32 route toward `ip` on `switch`; its value is a routing.Route."""
    switch: str
    ip: str
    kind = "route"


class CoreKey(NamedTuple):
    """A per-port core rule: on `switch`, toward `ip`, entering on `in_port`; its value is a
    policies.CoreRule."""
    switch: str
    in_port: int
    ip: str
    kind = "core"


class FlowKey(NamedTuple):
    """A per-flow rule on `switch` (a policy's Tracker wants it); its value is the output port
    (int: the flow is pinned) or the routing.Route to follow (a rule that only counts)."""
    switch: str
    flow: tuple                    # a policies.FiveTuple
    kind = "flow"


RuleKey = RouteKey | CoreKey | FlowKey


@dataclass(frozen=True)
class ControllerStatus:
    """What the controller reports about itself, rewritten as a whole (atomically) as it changes.

    connected: switches with a live OpenFlow connection; lost: switches whose connection dropped
    (or was replaced); learned: NIC ip -> the switch ports it announced itself on; down: ports
    the switches report down; policy: the routing options in force (routing_options' JSON);
    routes, core_rules: rules installed; routes_per_switch: every rule a switch holds regardless
    of traffic; isolated: switches with every port down (their rule changes wait);
    settled: nothing is waiting to be recomputed; tracker: what a traffic-reactive policy
    reports (policies' Tracker.status), None for the others. `written` is False for a status
    the controller has not written yet."""
    connected: tuple[str, ...] = ()
    lost: tuple[str, ...] = ()
    learned: dict[str, tuple[Port, ...]] = field(default_factory=dict)
    down: tuple[Port, ...] = ()
    policy: dict = field(default_factory=dict)
    routes: int = 0
    core_rules: int = 0
    routes_per_switch: dict[str, int] = field(default_factory=dict)
    isolated: tuple[str, ...] = ()
    settled: bool = False
    tracker: dict | None = None
    written: bool = True

    def to_json(self) -> dict:
        data = asdict(self)
        del data["written"]
        return data

    @classmethod
    def from_json(cls, data: object) -> ControllerStatus:
        """The record from the status file's JSON; an unwritten (or not-a-dict) file is an
        empty record with written=False. Unknown keys are ignored."""
        if not isinstance(data, dict):
            return cls(written=False)
        known = {f.name for f in fields(cls)} - {"written"}
        d = {k: v for k, v in data.items() if k in known}

        def ports(xs):
            return tuple((str(sw), int(p)) for sw, p in xs)

        for key in ("connected", "lost", "isolated"):
            d[key] = tuple(d.get(key) or ())
        d["down"] = ports(d.get("down") or ())
        d["learned"] = {ip: ports(at) for ip, at in (d.get("learned") or {}).items()}
        return cls(**d)
