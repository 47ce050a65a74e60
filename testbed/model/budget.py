"""Port budgets at full scale (claims B1-B4, C13): built from the same fabric model, never emulated.

`budget("hpn")` builds the HPN "paper" preset as Python objects and counts the ToR, segment and pod
figures from it (claims B1-B3, budget_hpn.py); `budget("mpft")` does the same for DeepSeek's
multi-plane fat-tree (B4, budget_mpft.py), `budget("railonly")` for a rail-only pod (C13,
budget_railonly.py). A family has a budget when its Family object says so (families/family.py:
the claims, the paper-scale presets, the counter). Every entry says where its number comes from
(budget_entries.py): counted, derived or quoted.
"""
from __future__ import annotations

import dataclasses
import time

from testbed.core.errors import ParamError
from testbed.model import families
from testbed.model.budget_view import claim_entries, render, render_text, rows

# a result is read with the functions of budget_view, re-exported here
__all__ = ["budget", "claim_entries", "render", "render_text", "rows"]


def budget(family: str, preset: str = "paper") -> dict:
    """Build `family`'s full-scale `preset` and count its port budget.

    Returns {"meta": {...}, "B1": {key: entry}, ...}: the claims of the family's Budget.
    An entry is {"what", "figure" (exact), "shown" (rounded as the paper rounds), "paper",
    "unit", "source", "how", "match"}; all values are JSON-friendly.
    """
    counted = families.budgeted()
    if family not in counted:
        raise ParamError(f"no port budget for {family!r}; choose from {', '.join(counted)}")
    spec = counted[family].budget
    if preset not in spec.presets:
        raise ParamError(f"no preset {preset!r} for {family}; choose from "
                         f"{', '.join(spec.presets)}")
    settings = dict(spec.presets[preset])
    t0 = time.perf_counter()
    fab = counted[family].make(settings, emulated=False)   # objects only, never emulated
    t1 = time.perf_counter()
    claims = spec.count(fab)
    t2 = time.perf_counter()
    meta = {
        "family": family, "preset": preset, "settings": settings,
        "params": {k: v for k, v in dataclasses.asdict(fab.params).items()},
        "built": {"switches": len(fab.switches), "hosts": len(fab.hosts),
                  "nics": len(fab.nics()), "links": len(fab.links)},
        "seconds": {"build": round(t1 - t0, 3), "count": round(t2 - t1, 3)},
    }
    return {"meta": meta, **claims}
