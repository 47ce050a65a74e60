"""Routing policies on top of the /32 routes of testbed.model.routing, computed without
touching a switch.

The controller (controller/rulestate.py) only pushes what these compute and feeds them what it
observes (port status, port and flow counters, TCP segments it is copied). A run chooses with
its `routing` options (`hpn-testbed up --policy ... --core ... --ecmp ...`; options.py):

* ``ecmp`` (the default policy): every switch with several next hops toward a NIC hashes the
  5-tuple over them (an OpenFlow select group; see testbed.model.routing).
* ``core: per-port`` (HPN's default, claim C8): a core switch sends traffic for a pod out of
  the port paired with the one it came in on (per_port_core.py).
* ``policy: static`` (DeepSeek Fig. 8, claim C12): one fixed port per destination, chosen so that
  the flows of a known traffic matrix share no link (static.py).
* ``policy: adaptive``: flows start on ECMP; the controller moves an elephant off a hot link
  onto the least-loaded alternative path (adaptive.py, adaptive_moves.py).

A policy is one object (base.RoutingPolicy: its options, its route computation, the hooks the
controller needs) in one module, registered here in POLICIES; a user's file registers its own
with register() (registry.py). What the switches then do, as a function of routes and core
rules, is forwarding.py.
"""
from testbed.model.fabric import Port
from testbed.model.paths import MAX_HOPS, Hop
from testbed.model.policies import adaptive, ecmp, static
from testbed.model.policies.adaptive import AdaptiveFlows
from testbed.model.policies.adaptive_moves import (
    Move,
    TrackedFlow,
    flow_rules,
    ingress_of,
    link_capacity,
    path_from_sightings,
    plan_moves,
    prune,
    update_rate,
)
from testbed.model.policies.base import FiveTuple, NicPairs, Number, RoutingPolicy, Sample, Tracker
from testbed.model.policies.forwarding import CoreRule, Forwarding, all_routes, switch_links
from testbed.model.policies.options import CORE_MODES, Routing, normalize
from testbed.model.policies.per_port_core import core_pairing, core_rules
from testbed.model.policies.registry import get, load_file, names, register, source, unregister
from testbed.model.policies.static import (
    all_paths,
    destination_index,
    matrix_paths,
    shared_links,
    static_choices,
    static_routes,
)

# The built-in routing policies, the first the default: one line per policy.
POLICIES = (ecmp.POLICY, static.POLICY, adaptive.POLICY)
for _policy in POLICIES:
    register(_policy)

__all__ = [
    "CORE_MODES",
    "MAX_HOPS",
    "POLICIES",
    "AdaptiveFlows",
    "CoreRule",
    "FiveTuple",
    "Forwarding",
    "Hop",
    "Move",
    "NicPairs",
    "Number",
    "Port",
    "Routing",
    "RoutingPolicy",
    "Sample",
    "TrackedFlow",
    "Tracker",
    "all_paths",
    "all_routes",
    "core_pairing",
    "core_rules",
    "destination_index",
    "flow_rules",
    "get",
    "ingress_of",
    "link_capacity",
    "load_file",
    "matrix_paths",
    "names",
    "normalize",
    "path_from_sightings",
    "plan_moves",
    "prune",
    "register",
    "shared_links",
    "source",
    "static_choices",
    "static_routes",
    "switch_links",
    "unregister",
    "update_rate",
]
