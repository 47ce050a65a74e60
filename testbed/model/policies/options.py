"""The `routing` options of a run, checked and completed with their defaults.

Three options every run has (ecmp: how select groups hash; core: how core switches forward;
policy: a registered routing policy, registry.py), and the options of the chosen policy
(declared by the policy object, base.py: e.g. adaptive's interval, static's matrix).
"""
from __future__ import annotations

from dataclasses import dataclass

from testbed.core.errors import ParamError
from testbed.model import families
from testbed.model.fabric import Fabric
from testbed.model.policies import registry
from testbed.model.policies.base import Number, RoutingPolicy
from testbed.model.policies.per_port_core import core_rules
from testbed.model.routing import ECMP_MODES, Route

# core mode -> the core rules it puts above the routes (ecmp: none, the core hashes too)
CORE_MODES = {"per-port": core_rules, "ecmp": lambda fabric, routes: []}


def check_core_applies(fabric: Fabric, core: object) -> None:
    """`core` chooses how core switches forward: refuse it where there are none (mpft and mrft
    are two-tier; hpn has its core only with more than one pod)."""
    if not any(s.role == "core" for s in fabric.switches.values()):
        raise ParamError(f"routing core={core!r}: this {fabric.family} fabric has no core tier "
                         "(hpn with pods > 1 and clos3 have one)")


@dataclass(frozen=True)
class Routing:
    """The routing options of a run, checked: what the controller computes its rules with."""
    ecmp: str
    core: str
    policy: RoutingPolicy
    options: dict          # the policy's own options, parsed (NIC pairs as IPs)

    def core_rules(self, fabric: Fabric, routes: list[Route]) -> list:
        return CORE_MODES[self.core](fabric, routes)

    def routes(self, fabric: Fabric, routes: list[Route], core: list) -> list[Route]:
        return self.policy.routes(fabric, routes, core, self.options)

    def to_json(self) -> dict:
        """The options as the status file reports them (NIC pairs left out: they can be long)."""
        kept = {o.name: self.options[o.name] for o in self.policy.options if isinstance(o, Number)}
        return {"ecmp": self.ecmp, "core": self.core, "policy": self.policy.name, **kept}


def normalize(fabric: Fabric, routing: dict | None) -> Routing:
    """The routing options with defaults filled in; ParamError naming a bad one.

    Keys: ecmp (polarized|seeded), core (per-port|ecmp), policy (a registered policy; the first of
    POLICIES, ecmp, by default), and the options the policy declares; an option of another policy is
    refused.
    """
    r = dict(routing or {})
    policy = registry.get(r.pop("policy", registry.names()[0]))   # the first registered: ecmp
    why = policy.refuses(fabric)
    if why:
        raise ParamError(f"routing policy={policy.name!r}: {why}")
    own = {o.name: o for o in policy.options}
    for key in sorted(set(r) - {"ecmp", "core"} - set(own)):
        others = [p for p in registry.names() if any(o.name == key for o in registry.get(p).options)]
        if others:
            raise ParamError(f"routing {key}: only applies to policy={others[0]} (this run's is "
                             f"{policy.name})")
        known = sorted({"ecmp", "core", "policy", *own})
        raise ParamError(f"unknown routing option {key!r}; known: {', '.join(known)}")
    if "core" in r:
        check_core_applies(fabric, r["core"])
    r.setdefault("ecmp", "seeded")
    r.setdefault("core", families.of(fabric).default_core)
    for key, choices in (("ecmp", ECMP_MODES), ("core", tuple(CORE_MODES))):
        if r[key] not in choices:
            raise ParamError(f"routing {key}={r[key]!r}: choose from {', '.join(choices)}")
    options = {name: o.parse(fabric, r[name]) if name in r else o.parse(fabric, o.default)
               for name, o in own.items()}
    return Routing(r["ecmp"], r["core"], policy, options)


def check_routes(fabric: Fabric, routing: Routing) -> None:
    """The chosen policy's routes on the settled fabric, tried before anything is built: each
    must name a switch of the fabric and next-hop ports it has (ParamError naming the first that
    does not), so that a user's policy that returns a port that does not exist is refused in one
    line, not installed as a rule to nowhere."""
    from testbed.model.policies.forwarding import all_routes
    base = all_routes(fabric)
    try:
        routes = routing.routes(fabric, base, routing.core_rules(fabric, base))
    except ParamError:
        raise
    except Exception as e:    # a user's policy that fails on this fabric: say so, in one line
        raise ParamError(f"routing policy={routing.policy.name!r}: its routes raised "
                         f"{type(e).__name__}: {e}".splitlines()[0]) from None
    for r in routes:
        bad = r.switch not in fabric.switches or not r.ports or any(
            not isinstance(p, int) or isinstance(p, bool) or not 1 <= p <= fabric.ports_of(r.switch)
            for p in r.ports)
        if bad:
            which = "a switch this fabric does not have" if r.switch not in fabric.switches else \
                "ports it does not have"
            raise ParamError(f"routing policy={routing.policy.name!r}: a route on {r.switch!r} toward "
                             f"{r.ip} leaves by ports {list(r.ports)!r}: {which}")
