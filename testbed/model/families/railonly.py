"""Rail-only tier 2 (the design HPN's lessons reject, Table 4): HPN's segments, but each
aggregation switch connects only the ToRs of one rail.

Everything below tier 2 is HPN's (its parameters, rules and segments, families/hpn.py). Tier 2 is
one set of 2 x aggs_per_plane aggregation switches per rail instead of one per pod: a switch
with HPN's down ports then takes one ToR per segment of its rail (and plane), so a pod holds
`rails` times HPN's segments (the budget: testbed/model/budget_railonly.py). The price: two NICs
on different rails share no switch, so within a pod no path joins them; a GPU must relay inside
its host (NVLink) to reach another rail. With more than one pod the core, cabled to every
aggregation switch as HPN's is, joins the rails: a cross-rail pair then detours over tier 3.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from testbed.model import budget_railonly
from testbed.model.fabric import Fabric, Switch
from testbed.model.families.family import Budget, Family
from testbed.model.families.hpn import PAPER, HpnParams, add_agg_set, assemble, pod_tors, segment_unit


@dataclass(frozen=True)
class RailOnlyParams(HpnParams):
    family: ClassVar[str] = "railonly"
    pods: int = 1                # one pod: no core, so no path between rails at all
    segments: int = 2            # so that same-rail traffic climbs to tier 2

    def _tier2_groups(self) -> int:
        return self.rails        # one aggregation set per rail


def build(p: RailOnlyParams) -> Fabric:
    return assemble(Fabric("railonly", p), p, add_rail_aggregation)


def add_rail_aggregation(fab: Fabric, p: RailOnlyParams, pod: int) -> None:
    """Per rail, its own aggregation switches p{pod}r{rail}a{plane}n{i}, cabled to that rail's
    ToRs only."""
    tors = pod_tors(fab, pod)
    for rail in range(p.rails):
        add_agg_set(fab, p, pod, [t for t in tors if t.coords[2] == rail], f"p{pod}r{rail}",
                    (pod, rail))


def by_rail(fab: Fabric, s: Switch) -> tuple[int, str] | None:
    """Drawing: tier 2 is split by rail, so every switch but the core is coloured by its rail."""
    if s.role == "core":
        return None
    rail = s.coords[2] if s.role == "tor" else s.coords[1]
    return rail, f"rail {rail}"


# HPN lessons, Table 4 (C13; budget_railonly.py): HPN's paper segments and switches, one pod,
# tier 2 rail-only; as many segments as an aggregation switch has ports down (120).
RAILONLY = Family("railonly", RailOnlyParams, build, segment_unit, group=by_rail,
                  budget=Budget(("C13",), {"paper": dict(PAPER, pods=1, segments=120)},
                                budget_railonly.count))
