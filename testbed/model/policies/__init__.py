"""Routing policies on top of the /32 routes of testbed.model.routing, computed without
touching a switch.

The controller (controller/app.py) only pushes what these functions return and feeds them what
it observes (port status, port and flow counters, TCP SYNs it sees). Four knobs, chosen with the
`routing` options of a run (`hpn-testbed up --policy ... --core ... --ecmp ...`; options.py):

* ``ecmp`` (the default policy): every switch with several next hops toward a NIC hashes the
  5-tuple over them (an OpenFlow select group; see testbed.model.routing).
* ``core: per-port`` (HPN's default, claim C8): a core switch sends traffic for a pod out of
  the port paired with the one it came in on (per_port_core.py).
* ``policy: static`` (DeepSeek Fig. 8, claim C12): one fixed port per destination, chosen so that
  the flows of a known traffic matrix share no link (static.py).
* ``policy: adaptive``: flows start on ECMP; the controller moves an elephant off a hot link
  onto the least-loaded alternative path (adaptive.py).

What the switches then do, as a function of routes and core rules, is forwarding.py.
"""
from testbed.model.fabric import Port
from testbed.model.paths import MAX_HOPS, Hop
from testbed.model.policies.adaptive import (
    FiveTuple,
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
from testbed.model.policies.forwarding import CoreRule, Forwarding, all_routes, switch_links
from testbed.model.policies.options import CORE_MODES, POLICIES, normalize
from testbed.model.policies.per_port_core import core_pairing, core_rules
from testbed.model.policies.static import (
    all_paths,
    destination_index,
    matrix_paths,
    shared_links,
    static_choices,
    static_routes,
)

__all__ = [
    "Port", "MAX_HOPS", "Hop",
    "POLICIES", "CORE_MODES", "normalize",
    "all_routes", "CoreRule", "Forwarding", "switch_links",
    "core_pairing", "core_rules",
    "destination_index", "all_paths", "static_choices", "static_routes", "matrix_paths",
    "shared_links",
    "FiveTuple", "TrackedFlow", "Move", "ingress_of", "path_from_sightings", "plan_moves",
    "flow_rules", "link_capacity", "update_rate", "prune",
]
