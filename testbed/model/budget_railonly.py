"""C13 at full scale: the pod a rail-only tier 2 buys (HPN lessons, Table 4), next to HPN's.

`budget("railonly")` builds the railonly "paper" preset: HPN's paper segments, ToRs and
aggregation switches (families/hpn.py: HPN's budget preset "paper"), one pod, each aggregation
switch cabled to one rail's ToRs only. An aggregation switch keeps HPN's 120 ports down; in HPN they take the
120 ToRs of one plane of 15 segments (8 rails each), rail-only gives each to one ToR of its rail
and plane per segment, so a pod holds 120 segments: rails (8) times HPN's pod. The HPN pod it is
compared with is counted from one pod of HPN's paper preset, built alongside.
"""
from __future__ import annotations

from testbed.model.budget_entries import Tally, entry, one
from testbed.model.budget_hpn import is_backup
from testbed.model.fabric import Fabric
from testbed.model.families.hpn import HPN


def _pod_gpus(fab: Fabric) -> int:
    """Active GPUs (NICs of hosts that are not spares) in pod 0."""
    p = fab.params
    return sum(len(h.nics) for h in fab.hosts.values() if h.pod == 0 and not is_backup(h, p))


def _rails_per_agg(fab: Fabric) -> int:
    """How many rails' ToRs one aggregation switch takes (the same for every one)."""
    sw = fab.switches
    rails: dict[str, set] = {s: set() for s in sw if sw[s].role == "agg"}
    for l in fab.switch_links():
        if sw[l.a].role == "tor" and l.b in rails:
            rails[l.b].add(sw[l.a].coords[2])
    return one([len(r) for r in rails.values()], "rails per aggregation switch")


def _islands_joining_rails(fab: Fabric) -> int:
    """Sets of switches joined by cables (union-find) whose ToRs are of more than one rail:
    only inside one can a packet cross from one rail to another."""
    parent = {s: s for s in fab.switches}

    def root(s):
        while parent[s] != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s
    for l in fab.switch_links():
        parent[root(l.a)] = root(l.b)
    rails: dict[str, set] = {}
    for s in fab.switches.values():
        if s.role == "tor":
            rails.setdefault(root(s.name), set()).add(s.coords[2])
    return sum(1 for r in rails.values() if len(r) > 1)


def count(fab: Fabric) -> dict:
    """C13: the rail-only pod, counted, and HPN's, counted from its own build."""
    t, sw = Tally(fab), fab.switches
    aggs = [s for s in sw.values() if s.role == "agg" and s.pod == 0]
    cross_rail = sum(1 for l in fab.switch_links() if sw[l.a].role == "tor" and sw[l.b].role == "agg"
                     and sw[l.a].coords[2] != sw[l.b].coords[1])
    segments = len({s.coords[1] for s in sw.values() if s.role == "tor" and s.pod == 0})
    gpus = _pod_gpus(fab)
    hpn = HPN.make(dict(HPN.budget.presets["paper"], pods=1), emulated=False)
    hpn_gpus = _pod_gpus(hpn)
    c13 = {
        "agg_down_ports": entry("aggregation ports down (400G)",
                                 one([t.down_n[s.name] for s in aggs], "aggregation down ports"),
                                 120, how="HPN's aggregation switch (B3)"),
        "rails_per_agg": entry("rails under one aggregation switch", _rails_per_agg(fab), 1,
                                how="'connect only same-rail ToRs'"),
        "hpn_rails_per_agg": entry("  HPN: rails under one aggregation switch",
                                    _rails_per_agg(hpn), 8, how="every rail of its plane"),
        "cross_rail_uplinks": entry("ToR uplinks to another rail's aggregation", cross_rail, 0),
        "islands_joining_rails": entry("switch islands joining two rails", _islands_joining_rails(fab),
                                        0, how="cables only: a cross-rail pair has no path in the pod"),
        "segments_per_pod": entry("segments per pod", segments, 120,
                                   how="one per aggregation port down, of each rail and plane"),
        "hpn_segments_per_pod": entry("  HPN: segments per pod",
                                       len({s.coords[1] for s in hpn.switches.values() if s.role == "tor"}),
                                       15, how="HPN's paper pod (B3)"),
        "gpus_per_pod": entry("rail-only: active GPUs per pod", gpus, 120_000, nearest=10_000,
                               how="paper: 'more than 120,000' (Table 4)"),
        "hpn_gpus_per_pod": entry("  HPN: active GPUs per pod", hpn_gpus, 15_000, nearest=1000,
                                   how="counted from HPN's paper pod; paper: 'about 15K'"),
        "pod_ratio": entry("rail-only pod / HPN pod", gpus / hpn_gpus, 8, unit="x", source="derived",
                            how="paper: 120K / 15K; the model: x rails", digits=3),
    }
    return {"C13": c13}
