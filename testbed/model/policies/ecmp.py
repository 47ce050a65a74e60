"""ECMP (the default policy): every switch with several next hops toward a NIC hashes the
5-tuple over them (an OpenFlow select group; see testbed.model.routing). The routes are the
/32 routes as computed, every next hop kept; the switches' hashing does the rest."""
from __future__ import annotations

from testbed.model.policies.base import RoutingPolicy


class Ecmp(RoutingPolicy):
    name = "ecmp"
    summary = "ECMP hashing over every next hop (the default)"


POLICY = Ecmp()
