"""The scenarios: each reproduces a claim of the papers (docs/claims.md) at small scale.

A scenario module defines one Scenario subclass and is listed in MODULES, the one place one of
ours is registered: `hpn-testbed list` shows them in that order, `hpn-testbed run NAME` runs
one, `hpn-testbed run` runs the tour: the scenarios whose class says `tour=True`, in the same
order, in quick mode. A scenario from outside the tree (a `--custom FILE.py`, an installed
package's `hpn_testbed.scenarios` entry point) joins with `register(cls)`, checked like ours
(testbed/scenario/registry.py), after ours.

claims/ holds the claims, one module each (a package when a claim has parts of its own:
core_pipeline, segment_placement, rail_only), written with the framework testbed/scenario/; the
catalog of every scenario (testbed/scenario/catalog.py) finds them here by name. The functions
below are the catalog's, for code that reads `scenarios.get(...)`.
"""
from __future__ import annotations

from testbed.scenario.base import Scenario
from testbed.scenario.catalog import all_scenarios, built_in, get, register, scenario_class, tour, unregister

__all__ = ["MODULES", "Scenario", "all_scenarios", "built_in", "get", "register", "scenario_class", "tour",
           "unregister"]

MODULES: list[str] = ["hash_polarization", "dual_plane_balance", "mpft_vs_mrft", "node_limited_moe",
                      "disjoint_paths", "routing_policies", "dual_tor_link_failure", "link_flap",
                      "one_way_fault", "tor_failure", "segment_tor_failure", "miswiring", "segment_placement",
                      "core_pipeline", "rail_only", "roce_entropy", "fast_uplinks",
                      "skeleton_probing", "training_fault"]     # module names under scenarios/claims/


def __getattr__(name: str):
    # TOUR is derived from the classes, so it is computed when asked for: importing the package
    # does not bring up every scenario's imports
    if name == "TOUR":
        return tour()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
