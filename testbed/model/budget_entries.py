"""What every port budget is made of: entries that say where their figure comes from, and a
tally of each switch's ports and bandwidth (testbed/model/budget.py says how budgets are read).

  counted   counted from the built fabric (switch roles, links and their gbps, hosts, NICs)
  derived   arithmetic on counted figures and the family's parameters (HPN's step table)
  quoted    a constant the paper quotes and the model cannot produce (MPFT's cost per endpoint)
"""
from __future__ import annotations

from collections import defaultdict

from testbed.core.errors import ParamError
from testbed.model.fabric import Fabric


def entry(what, figure, paper, *, unit="", source="counted", how="", digits=None, nearest=None):
    """One comparable figure. `shown` is `figure` rounded the way the paper rounds it."""
    shown = figure
    if nearest:
        shown = int(round(figure / nearest) * nearest)
    elif digits is not None:
        shown = round(figure, digits)
    elif isinstance(figure, float) and figure.is_integer():
        shown = int(figure)
    if isinstance(shown, float):
        shown = round(shown, 6)          # 25.599999999 -> 25.6 for display and comparison
    return {"what": what, "figure": figure, "shown": shown, "paper": paper, "unit": unit,
            "source": source, "how": how, "match": shown == paper}


def one(values, what):
    """The value every switch of a role agrees on (the presets are uniform)."""
    distinct = set(values)
    if len(distinct) != 1:
        raise ParamError(f"{what} differs across switches ({sorted(distinct)}): "
                         "the budget needs a uniform fabric")
    return distinct.pop()


class Tally:
    """Per-switch port and bandwidth counts in one pass over the links."""

    def __init__(self, fab: Fabric):
        self.down_n = defaultdict(int)
        self.down_gbps = defaultdict(float)
        self.up_n = defaultdict(int)
        self.up_gbps = defaultdict(float)
        self.host_links = defaultdict(list)      # switch -> links from host ports
        for l in fab.links:
            self.down_n[l.b] += 1
            self.down_gbps[l.b] += l.gbps
            if l.a in fab.switches:
                self.up_n[l.a] += 1
                self.up_gbps[l.a] += l.gbps
            else:
                self.host_links[l.b].append(l)
