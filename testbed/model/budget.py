"""Port budgets at full scale (claims B1-B4): built from the same fabric model, never emulated.

`budget("hpn")` builds the HPN "paper" preset as Python objects and counts the ToR, segment and pod
figures from it (claims B1-B3); `budget("mpft")` does the same for DeepSeek's multi-plane fat-tree
(B4). Every entry says where its number comes from:

  counted   counted from the built fabric (switch roles, links and their gbps, hosts, NICs)
  derived   arithmetic on counted figures and the family's parameters (HPN's step table)
  quoted    a constant the paper quotes and the model cannot produce (MPFT's cost per endpoint)
"""
from __future__ import annotations

import dataclasses
import time
from collections import defaultdict

from testbed.core.errors import ParamError
from testbed.model import make_fabric
from testbed.model.budget_view import claim_entries, render, render_text, rows
from testbed.model.fabric import Fabric

# a result is read with the functions of budget_view, re-exported here
__all__ = ["PRESETS", "CLAIMS", "budget", "claim_entries", "render", "render_text", "rows"]

PRESETS: dict[str, dict[str, dict[str, object]]] = {
    "hpn": {
        # HPN sec. 3: a segment is 16 ToRs (8 dual-ToR pairs, one per rail) under 136 hosts of 8 GPUs,
        # 8 of the hosts spares; 200G per NIC port, 60 x 400G up per ToR; a pod is 15 segments and
        # 2 planes of 60 aggregation switches; each aggregation switch has 120 ports down and 8 up
        # toward a 15:1 core. pods=2 so that the core tier exists at all.
        "paper": dict(pods=2, segments=15, hosts=136, backup_hosts=8, nics=8, rails=8,
                      aggs_per_plane=60, cores=8, core_oversubscription=15.0,
                      host_gbps=200, uplink_gbps=400,
                      # the model's radix counts cables: a ToR uses 136 split 200G ports + 60 up,
                      # and with 2 pods a core switch takes 2 x 120 aggregation uplinks
                      radix=256),
    },
    "mpft": {
        # DeepSeek-V3 sec. 5.1 / Table 3: 64-port 400G switches, per plane 64 leaves x 32 hosts down
        # and 32 spines, 8 planes (NIC i of every node in plane i).
        "paper": dict(planes=8, leaves=64, spines=32, hosts_per_leaf=32,
                      host_gbps=400, uplink_gbps=400, radix=64),
    },
}

# HPN lessons, Table 4 (C13; budget_railonly.py): HPN's paper segments and switches, one pod,
# tier 2 rail-only; as many segments as an aggregation switch has ports down (120).
PRESETS["railonly"] = {"paper": dict(PRESETS["hpn"]["paper"], pods=1, segments=120)}

CLAIMS = {"hpn": ("B1", "B2", "B3"), "mpft": ("B4",), "railonly": ("C13",)}

# DeepSeek-V3 Table 3, quoting the Slim Fly paper's cost model: the model has no prices.
QUOTED_COST_KUSD = {"mpft": 4.39, "fat_tree_3tier": 7.5}


# ---------------------------------------------------------------- entries

def _entry(what, figure, paper, *, unit="", source="counted", how="", digits=None, nearest=None):
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


def _one(values, what):
    """The value every switch of a role agrees on (the presets are uniform)."""
    distinct = set(values)
    if len(distinct) != 1:
        raise ParamError(f"{what} differs across switches ({sorted(distinct)}): "
                         "the budget needs a uniform fabric")
    return distinct.pop()


class _Tally:
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


# ---------------------------------------------------------------- HPN (B1-B3)

def _is_backup(host, p) -> bool:
    # The model says how many hosts per segment are spares, not which: the budget takes the last
    # `backup_hosts` of each segment (coords = (pod, segment, index)).
    return host.coords[-1] >= p.hosts - p.backup_hosts


def _hpn(fab: Fabric) -> dict:
    t = _Tally(fab)
    tors = [s for s in fab.switches.values() if s.role == "tor"]
    b1, capacity, uplink_gbps = _hpn_tor(fab, t, tors)
    return {"B1": b1, "B2": _hpn_segment(fab, t, tors),
            "B3": _hpn_pod(fab, t, tors, capacity, uplink_gbps)}


def _hpn_tor(fab: Fabric, t: _Tally, tors: list) -> tuple[dict, float, float]:
    """B1: one ToR. Also returns its switching capacity and uplink rate (Gb/s), which B3 uses."""
    p, sw = fab.params, fab.switches

    def tor_figures(tor):
        links = t.host_links[tor.name]
        active = [l for l in links if not _is_backup(fab.hosts[l.a], p)]
        return (len(links), len(active), sum(l.gbps for l in links), sum(l.gbps for l in active),
                t.up_n[tor.name], t.up_gbps[tor.name])
    host_ports, active_ports, down_all, down_active, up_ports, up = \
        _one([tor_figures(s) for s in tors], "ToR port budget")
    uplink_gbps = _one([l.gbps for l in fab.links if l.a in sw and sw[l.a].role == "tor"],
                       "ToR uplink rate")
    capacity = down_all + up                      # what the chip must switch, Gb/s
    b1 = {
        "tor_tbps": _entry("ToR switching capacity", capacity / 1000, 51.2, unit="Tb/s",
                           how="sum of link rates on one ToR", digits=1),
        "tor_ports_400g": _entry("ToR ports at 400G", capacity / uplink_gbps, 128,
                                 how="capacity / uplink rate"),
        "tor_split_ports": _entry("400G ports split for hosts", down_all / uplink_gbps, 68,
                                  how="host-facing Gb/s / 400G"),
        "tor_host_ports": _entry("host-facing 200G ports", host_ports, 136),
        "tor_active_ports": _entry("  of which active", active_ports, 128),
        "tor_backup_ports": _entry("  of which backup", host_ports - active_ports, 8),
        "tor_up_ports": _entry("uplinks (400G)", up_ports, 60),
        "tor_down_active_tbps": _entry("downlink, active ports", down_active / 1000, 25.6,
                                       unit="Tb/s", digits=1),
        "tor_down_all_tbps": _entry("downlink, with backups", down_all / 1000, 27.2,
                                    unit="Tb/s", digits=1),
        "tor_up_tbps": _entry("uplink", up / 1000, 24.0, unit="Tb/s", digits=1),
        "tor_ratio_active": _entry("down:up, active ports", down_active / up, 1.067, unit=":1",
                                   how="25.6 / 24", digits=3),
        "tor_ratio_all": _entry("down:up, with backups", down_all / up, 1.133, unit=":1",
                                how="27.2 / 24", digits=3),
    }
    return b1, capacity, uplink_gbps


def _hpn_segment(fab: Fabric, t: _Tally, tors: list) -> dict:
    """B2: one segment (pod 0, segment 0)."""
    p, sw = fab.params, fab.switches
    seg_tors = [s for s in tors if s.coords[:2] == (0, 0)]
    pairs = defaultdict(set)                      # (pod, seg, rail) -> sides
    for s in seg_tors:
        pairs[s.coords[:3]].add(s.coords[3])
    seg_hosts = [h for h in fab.hosts.values() if h.coords[:2] == (0, 0)]
    gpus = [n for h in seg_hosts for n in h.nics]    # one NIC per GPU
    active_gpus = [n for n in gpus if not _is_backup(fab.hosts[n.host], p)]
    # a NIC is dual-homed when its ports land on both ToRs of one pair
    port_tor = {l.a_intf: l.b for tor in seg_tors for l in t.host_links[tor.name]}
    dual_homed = sum(1 for n in gpus
                     if len({sw[port_tor[i]].coords[:3] for i in n.ports}) == 1
                     and len({port_tor[i] for i in n.ports}) == 2)
    pair_gpus = _one([sum(1 for l in t.host_links[s.name] if not _is_backup(fab.hosts[l.a], p))
                      for s in seg_tors], "active GPUs per ToR")
    return {
        "tors_per_segment": _entry("ToRs per segment", len(seg_tors), 16),
        "tor_pairs": _entry("ToR pairs (one per rail)",
                            sum(1 for sides in pairs.values() if len(sides) == 2), 8),
        "hosts_per_segment": _entry("hosts per segment", len(seg_hosts), 136),
        "gpus_per_host": _entry("GPUs (NICs) per host", _one([len(h.nics) for h in seg_hosts],
                                                              "NICs per host"), 8),
        "dual_homed_nics": _entry("NICs on both ToRs of one pair", dual_homed, 1088,
                                  how="every NIC: 136 hosts x 8"),
        "gpus_per_pair": _entry("active GPUs per ToR pair", pair_gpus, 128),
        "gpus_active": _entry("active GPUs per segment", len(active_gpus), 1024),
        "gpus_backup": _entry("backup GPUs per segment", len(gpus) - len(active_gpus), 64),
    }


def _hpn_pod(fab: Fabric, t: _Tally, tors: list, capacity: float, uplink_gbps: float) -> dict:
    """B3: one pod (pod 0), then HPN's step table."""
    p, sw = fab.params, fab.switches
    pod_aggs = [s for s in sw.values() if s.role == "agg" and s.pod == 0]
    planes = sorted({s.plane for s in pod_aggs})
    per_plane = _one([sum(1 for s in pod_aggs if s.plane == k) for k in planes], "aggs per plane")
    agg_down = _one([t.down_n[s.name] for s in pod_aggs], "aggregation down ports")
    agg_down_gbps = _one([t.down_gbps[s.name] for s in pod_aggs], "aggregation down Gb/s")
    agg_up = _one([t.up_n[s.name] for s in pod_aggs], "aggregation up ports")
    agg_up_gbps = _one([t.up_gbps[s.name] for s in pod_aggs], "aggregation up Gb/s")
    up_source, up_how = "counted", "links to the core"
    agg_capacity = agg_down_gbps + agg_up_gbps
    agg_ports = agg_capacity / uplink_gbps                 # 400G ports the aggregation chip has
    cross_plane = sum(1 for l in fab.links if l.a in sw and sw[l.a].role == "tor"
                      and sw[l.b].role == "agg" and sw[l.a].plane != sw[l.b].plane)
    pod_gpus = sum(1 for h in fab.hosts.values() if h.pod == 0 and not _is_backup(h, p)
                   for _ in h.nics)
    segments = len({s.coords[1] for s in tors if s.pod == 0})
    counted = {
        "segments_per_pod": _entry("segments per pod", segments, 15),
        "planes": _entry("aggregation planes", len(planes), 2),
        "aggs_per_plane": _entry("aggregation switches per plane", per_plane, 60),
        "agg_down_ports": _entry("aggregation ports down (400G)", agg_down, 120),
        "agg_up_ports": _entry("aggregation ports up", agg_up, 8, source=up_source, how=up_how),
        "agg_up_gbps": _entry("  rate of each up port", agg_up_gbps / agg_up, 400, unit="Gb/s",
                              source=up_source),
        "agg_oversubscription": _entry("aggregation down:up toward the core",
                                       agg_down_gbps / agg_up_gbps, 15, unit=":1",
                                       source=up_source, digits=3),
        "agg_ports_400g": _entry("aggregation ports at 400G", agg_ports, 128, source=up_source,
                                 how="(down + up Gb/s) / 400G"),
        "cross_plane_links": _entry("ToR uplinks into the other plane", cross_plane, 0,
                                    how="dual-plane: none"),
        "gpus_per_pod": _entry("active GPUs per pod", pod_gpus, 15000, nearest=1000,
                               how="paper: 'about 15K'"),
    }
    return {**counted, **_hpn_steps(p, capacity, agg_ports, agg_down, agg_up, pod_gpus)}


def _hpn_steps(p, capacity: float, agg_ports: float, agg_down: int, agg_up: int,
               pod_gpus: int) -> dict:
    """HPN's step table (sec. 3): each row is the previous one times a factor read from the
    parameters. tier1 = GPUs under one ToR (then one segment), pod = GPUs under tier 2."""
    gpu_gbps = p.ports_per_nic * p.host_gbps               # a GPU's bandwidth into the network
    half = agg_ports / 2                                   # a non-oversubscribed switch: half down
    plain_tier1 = (capacity / 2) / gpu_gbps                # half the ToR down, 400G per GPU: 64
    dual_tor = p.ports_per_nic     # each NIC's bandwidth is split over 2 ToRs: a ToR serves 2x GPUs
    rail_opt = p.rails             # GPU i of every host on rail i: a segment is `rails` ToR pairs
    dual_plane = p.planes          # a ToR reaches only its plane's aggs: half the links, 2x ToRs
    oversub = agg_down / half      # 15:1 toward the core: 120 ports down instead of 64
    # The digest gives the plain pod (2K) without its derivation; it is the counted pod with the
    # three tier-2 steps undone, so the rows below multiply back up to the counted pod.
    plain_pod = pod_gpus / (dual_tor * dual_plane * oversub)
    return {
        "step_plain_tier1": _entry("step: plain 51.2T Clos, GPUs per ToR", plain_tier1, 64,
                                   source="derived",
                                   how=f"half of {capacity / 1000:g}T / {gpu_gbps:g}G per GPU"),
        "step_plain_pod": _entry("step: plain 51.2T Clos, GPUs per pod", plain_pod, 2000,
                                 source="derived", nearest=1000,
                                 how="counted pod / (dual-ToR x dual-plane x 15:1); paper '2K'"),
        "step_dual_tor_tier1": _entry("step: + dual-ToR, tier 1", plain_tier1 * dual_tor, 128,
                                      source="derived",
                                      how=f"x{dual_tor} (ports per NIC: each ToR carries half a NIC)"),
        "step_dual_tor_pod": _entry("step: + dual-ToR, pod", plain_pod * dual_tor, 4096,
                                    source="derived", how=f"x{dual_tor} (ports per NIC)"),
        "step_rail_tier1": _entry("step: + rail-optimized, tier 1",
                                  plain_tier1 * dual_tor * rail_opt, 1024, source="derived",
                                  how=f"x{rail_opt} (rails: one ToR pair per GPU index)"),
        "step_dual_plane_pod": _entry("step: + dual-plane, pod",
                                      plain_pod * dual_tor * dual_plane, 8192, source="derived",
                                      how=f"x{dual_plane} (planes: a ToR needs only its plane's aggs)"),
        "step_freed_agg_ports": _entry("step: aggregation ports freed by 15:1",
                                       half - agg_up, 56, source="derived",
                                       how=f"{half:g} up at 1:1 - {agg_up} up at 15:1 (paper: 64 - 8)"),
        "step_oversub_pod": _entry("step: + 15:1 toward the core, pod",
                                   plain_pod * dual_tor * dual_plane * oversub, 15360,
                                   source="derived",
                                   how=f"x{agg_down}/{half:g} (aggregation ports down vs radix/2)"),
    }


# ---------------------------------------------------------------- MPFT (B4)

def _mpft(fab: Fabric) -> dict:
    t = _Tally(fab)
    sw = fab.switches
    planes = sorted({s.plane for s in sw.values()})
    leaves = [s for s in sw.values() if s.role == "leaf"]
    spines = [s for s in sw.values() if s.role == "spine"]
    per_plane = lambda group: _one([sum(1 for s in group if s.plane == k) for k in planes],
                                   "switches per plane")
    ports = _one([fab.ports_of(s.name) for s in sw.values()], "ports per switch")
    rate = _one([l.gbps for l in fab.links], "link rate")
    down = _one([len(t.host_links[s.name]) for s in leaves], "hosts per leaf")
    endpoints = _one([sum(len(t.host_links[s.name]) for s in leaves if s.plane == k)
                      for k in planes], "endpoints per plane")
    tiers = _one([len({sw[n].tier for n in sw if sw[n].plane == k}) for k in planes],
                 "tiers per plane")
    plane_of = {n: s.plane for n, s in sw.items()}
    crossing = sum(1 for l in fab.links if l.a in sw and plane_of[l.a] != plane_of[l.b])
    nic_of_port = {port: nic for nic in fab.nics() for port in nic.ports}
    nic_in_own_plane = sum(1 for l in fab.links if l.a not in sw
                           and nic_of_port[l.a_intf].index == plane_of[l.b])
    leaves_pp, spines_pp = per_plane(leaves), per_plane(spines)
    b4 = {
        "switch_ports": _entry("ports per switch", ports, 64),
        "link_gbps": _entry("port rate", rate, 400, unit="Gb/s"),
        "tiers_per_plane": _entry("tiers per plane", tiers, 2),
        "leaves_per_plane": _entry("leaves per plane", leaves_pp, 64),
        "down_per_leaf": _entry("ports down per leaf", down, 32),
        "endpoints_per_plane": _entry("endpoints per plane", endpoints, 2048, how="64 x 32"),
        "spines_per_plane": _entry("spines per plane", spines_pp, 32),
        "switches_per_plane": _entry("switches per plane", leaves_pp + spines_pp, 96,
                                     how="64 + 32"),
        "planes": _entry("planes", len(planes), 8),
        "gpus": _entry("GPUs (one NIC each)", len(fab.nics()), 16384, how="8 x 2,048"),
        "switches": _entry("switches", len(sw), 768, how="8 x 96"),
        "cross_plane_links": _entry("links joining two planes", crossing, 0,
                                    how="planes share no switch"),
        "nics_in_own_plane": _entry("NIC i cabled into plane i", nic_in_own_plane, 16384),
        "cost_mpft_kusd": _entry("cost per endpoint, MPFT (as quoted)", QUOTED_COST_KUSD["mpft"],
                                 4.39, unit="k$", source="quoted",
                                 how="DeepSeek Table 3 quoting the Slim Fly cost model"),
        "cost_ft3_kusd": _entry("cost per endpoint, three-tier fat-tree (as quoted)",
                                QUOTED_COST_KUSD["fat_tree_3tier"], 7.5, unit="k$",
                                source="quoted",
                                how="DeepSeek Table 3 quoting the Slim Fly cost model"),
    }
    return {"B4": b4}


def _railonly(fab: Fabric) -> dict:
    from testbed.model.budget_railonly import railonly  # it builds on this module's entries
    return railonly(fab)


COUNTERS = {"hpn": _hpn, "mpft": _mpft, "railonly": _railonly}


def budget(family: str, preset: str = "paper") -> dict:
    """Build `family`'s full-scale `preset` and count its port budget.

    Returns {"meta": {...}, "B1": {key: entry}, ...} with the claims of the family (CLAIMS).
    An entry is {"what", "figure" (exact), "shown" (rounded as the paper rounds), "paper",
    "unit", "source", "how", "match"}; all values are JSON-friendly.
    """
    if family not in COUNTERS:
        raise ParamError(f"no port budget for {family!r}; choose from {', '.join(COUNTERS)}")
    if preset not in PRESETS[family]:
        raise ParamError(f"no preset {preset!r} for {family}; choose from "
                         f"{', '.join(PRESETS[family])}")
    settings = dict(PRESETS[family][preset])
    t0 = time.perf_counter()
    fab = make_fabric(family, settings, emulated=False)   # objects only, never emulated
    t1 = time.perf_counter()
    claims = COUNTERS[family](fab)
    t2 = time.perf_counter()
    meta = {
        "family": family, "preset": preset, "settings": settings,
        "params": {k: v for k, v in dataclasses.asdict(fab.params).items()},
        "built": {"switches": len(fab.switches), "hosts": len(fab.hosts),
                  "nics": len(fab.nics()), "links": len(fab.links)},
        "seconds": {"build": round(t1 - t0, 3), "count": round(t2 - t1, 3)},
    }
    return {"meta": meta, **claims}
