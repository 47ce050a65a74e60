"""The scenarios: each reproduces a claim of the papers (../shared/claims.md) at small scale.

A scenario module defines one Scenario subclass and is listed in MODULES; `hpn-testbed list`
shows them, `hpn-testbed run NAME` runs one, `hpn-testbed run` runs the tour (TOUR, quick mode).
"""
from __future__ import annotations

import importlib

from testbed.core.errors import ParamError

MODULES: list[str] = ["hash_polarization", "dual_plane_balance", "mpft_vs_mrft", "node_limited_moe", "disjoint_paths", "routing_policies",
                      "dual_tor_link_failure", "link_flap", "one_way_fault", "tor_failure"]   # module names under scenarios/, in the order `list` shows them
TOUR: list[str] = ["hash-polarization", "dual-plane-balance", "mpft-vs-mrft", "node-limited-moe", "disjoint-paths",
                   "dual-tor-link-failure", "link-flap", "one-way-fault"]      # the headline scenarios `hpn-testbed run` (and `make demo`) runs


def all_scenarios() -> dict:
    found = {}
    for module in MODULES:
        cls = importlib.import_module(f"scenarios.{module}").SCENARIO
        found[cls.name] = cls
    return found


def get(name: str):
    scenarios = all_scenarios()
    if name not in scenarios:
        raise ParamError(f"no scenario {name!r}; `hpn-testbed list` names them: "
                         f"{', '.join(scenarios) or 'none yet'}")
    return scenarios[name]()
