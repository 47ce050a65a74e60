"""The scenarios: each reproduces a claim of the papers (docs/claims.md) at small scale.

A scenario module defines one Scenario subclass and is listed in MODULES, the one place one of
ours is registered: `hpn-testbed list` shows them in that order, `hpn-testbed run NAME` runs
one, `hpn-testbed run` runs the tour: the scenarios whose class says `tour=True`, in the same
order, in quick mode. A scenario from outside the tree (a `--custom FILE.py`, an installed
package's `hpn_testbed.scenarios` entry point) joins with `register(cls)`, checked like ours
(scenarios/registry.py), after ours.

Two rooms: claims/ holds the claims, one module each (a package when a claim has parts of its
own: core_pipeline, segment_placement, rail_only); kit/ the framework they are written with.
"""
from __future__ import annotations

import importlib

from scenarios import registry
from scenarios.kit.base import Scenario
from testbed.core.errors import ParamError

__all__ = ["MODULES", "Scenario", "all_scenarios", "get", "register", "tour", "unregister"]

MODULES: list[str] = ["hash_polarization", "dual_plane_balance", "mpft_vs_mrft", "node_limited_moe",
                      "disjoint_paths", "routing_policies", "dual_tor_link_failure", "link_flap",
                      "one_way_fault", "tor_failure", "segment_tor_failure", "miswiring", "segment_placement",
                      "core_pipeline", "rail_only", "roce_entropy", "fast_uplinks",
                      "skeleton_probing"]     # module names under scenarios/claims/


def scenario_class(module: str) -> type[Scenario]:
    """The Scenario subclass scenarios/claims/MODULE (a module, or a package for a claim with parts)
    defines (not one it imports)."""
    namespace = importlib.import_module(f"scenarios.claims.{module}")
    (cls,) = [c for c in vars(namespace).values() if isinstance(c, type) and issubclass(c, Scenario)
              and c.__module__ == namespace.__name__]
    return cls


def built_in() -> dict[str, type[Scenario]]:
    classes = [scenario_class(module) for module in MODULES]
    return {cls.name: cls for cls in classes}


def register(cls: type[Scenario]) -> type[Scenario]:
    """Add a Scenario subclass of a plug-in (what `--custom FILE.py` or an entry point calls),
    checked like ours: ParamError, one line, for a name taken or malformed, untyped or unranged
    knobs, no judge, defaults the model refuses (scenarios/registry.py). Returns `cls`, so it
    also decorates the class."""
    return registry.register(cls, built_in())


unregister = registry.unregister


def all_scenarios() -> dict[str, type[Scenario]]:
    """Ours in MODULES' order, then the plug-ins' and (loaded at this first read) the installed
    packages' in the order they registered."""
    from testbed.core import entrypoints
    entrypoints.load("scenarios", register, lambda c: registry.PLUGGED.get(getattr(c, "name", None)) is c)
    return {**built_in(), **registry.PLUGGED}


def tour() -> list[str]:
    """The headline scenarios `hpn-testbed run` (and `make demo`) runs, in order."""
    return [name for name, cls in all_scenarios().items() if cls.tour]


def get(name: str):
    scenarios = all_scenarios()
    if name not in scenarios:
        raise ParamError(f"no scenario {name!r}; `hpn-testbed list` names them: "
                         f"{', '.join(scenarios) or 'none yet'}")
    return scenarios[name]()


def __getattr__(name: str):
    # TOUR is derived from the classes, so it is computed when asked for: importing the package
    # does not bring up every scenario's imports
    if name == "TOUR":
        return tour()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
