"""HPN's port budget at full scale (claims B1-B3): one ToR, one segment, one pod, counted from the
built "paper" preset (families/hpn.py)."""
from __future__ import annotations

from collections import defaultdict

from testbed.model.budget_entries import Tally, entry, one
from testbed.model.fabric import Fabric


def is_backup(host, p) -> bool:
    # The model says how many hosts per segment are spares, not which: the budget takes the last
    # `backup_hosts` of each segment (coords = (pod, segment, index)).
    return host.coords[-1] >= p.hosts - p.backup_hosts


def count(fab: Fabric) -> dict:
    """B1-B3 of an HPN fabric: one ToR, one segment, one pod."""
    t = Tally(fab)
    tors = [s for s in fab.switches.values() if s.role == "tor"]
    b1, capacity, uplink_gbps = _hpn_tor(fab, t, tors)
    return {"B1": b1, "B2": _hpn_segment(fab, t, tors),
            "B3": _hpn_pod(fab, t, tors, capacity, uplink_gbps)}


def _hpn_tor(fab: Fabric, t: Tally, tors: list) -> tuple[dict, float, float]:
    """B1: one ToR. Also returns its switching capacity and uplink rate (Gb/s), which B3 uses."""
    p, sw = fab.params, fab.switches

    def tor_figures(tor):
        links = t.host_links[tor.name]
        active = [l for l in links if not is_backup(fab.hosts[l.a], p)]
        return (len(links), len(active), sum(l.gbps for l in links), sum(l.gbps for l in active),
                t.up_n[tor.name], t.up_gbps[tor.name])
    host_ports, active_ports, down_all, down_active, up_ports, up = \
        one([tor_figures(s) for s in tors], "ToR port budget")
    uplink_gbps = one([l.gbps for l in fab.links if l.a in sw and sw[l.a].role == "tor"],
                       "ToR uplink rate")
    capacity = down_all + up                      # what the chip must switch, Gb/s
    b1 = {
        "tor_tbps": entry("ToR switching capacity", capacity / 1000, 51.2, unit="Tb/s",
                           how="sum of link rates on one ToR", digits=1),
        "tor_ports_400g": entry("ToR ports at 400G", capacity / uplink_gbps, 128,
                                 how="capacity / uplink rate"),
        "tor_split_ports": entry("400G ports split for hosts", down_all / uplink_gbps, 68,
                                  how="host-facing Gb/s / 400G"),
        "tor_host_ports": entry("host-facing 200G ports", host_ports, 136),
        "tor_active_ports": entry("  of which active", active_ports, 128),
        "tor_backup_ports": entry("  of which backup", host_ports - active_ports, 8),
        "tor_up_ports": entry("uplinks (400G)", up_ports, 60),
        "tor_down_active_tbps": entry("downlink, active ports", down_active / 1000, 25.6,
                                       unit="Tb/s", digits=1),
        "tor_down_all_tbps": entry("downlink, with backups", down_all / 1000, 27.2,
                                    unit="Tb/s", digits=1),
        "tor_up_tbps": entry("uplink", up / 1000, 24.0, unit="Tb/s", digits=1),
        "tor_ratio_active": entry("down:up, active ports", down_active / up, 1.067, unit=":1",
                                   how="25.6 / 24", digits=3),
        "tor_ratio_all": entry("down:up, with backups", down_all / up, 1.133, unit=":1",
                                how="27.2 / 24", digits=3),
    }
    return b1, capacity, uplink_gbps


def _hpn_segment(fab: Fabric, t: Tally, tors: list) -> dict:
    """B2: one segment (pod 0, segment 0)."""
    p, sw = fab.params, fab.switches
    seg_tors = [s for s in tors if s.coords[:2] == (0, 0)]
    pairs = defaultdict(set)                      # (pod, seg, rail) -> sides
    for s in seg_tors:
        pairs[s.coords[:3]].add(s.coords[3])
    seg_hosts = [h for h in fab.hosts.values() if h.coords[:2] == (0, 0)]
    gpus = [n for h in seg_hosts for n in h.nics]    # one NIC per GPU
    active_gpus = [n for n in gpus if not is_backup(fab.hosts[n.host], p)]
    # a NIC is dual-homed when its ports land on both ToRs of one pair
    port_tor = {l.a_intf: l.b for tor in seg_tors for l in t.host_links[tor.name]}
    dual_homed = sum(1 for n in gpus
                     if len({sw[port_tor[i]].coords[:3] for i in n.ports}) == 1
                     and len({port_tor[i] for i in n.ports}) == 2)
    pair_gpus = one([sum(1 for l in t.host_links[s.name] if not is_backup(fab.hosts[l.a], p))
                      for s in seg_tors], "active GPUs per ToR")
    return {
        "tors_per_segment": entry("ToRs per segment", len(seg_tors), 16),
        "tor_pairs": entry("ToR pairs (one per rail)",
                            sum(1 for sides in pairs.values() if len(sides) == 2), 8),
        "hosts_per_segment": entry("hosts per segment", len(seg_hosts), 136),
        "gpus_per_host": entry("GPUs (NICs) per host", one([len(h.nics) for h in seg_hosts],
                                                              "NICs per host"), 8),
        "dual_homed_nics": entry("NICs on both ToRs of one pair", dual_homed, 1088,
                                  how="every NIC: 136 hosts x 8"),
        "gpus_per_pair": entry("active GPUs per ToR pair", pair_gpus, 128),
        "gpus_active": entry("active GPUs per segment", len(active_gpus), 1024),
        "gpus_backup": entry("backup GPUs per segment", len(gpus) - len(active_gpus), 64),
    }


def _hpn_pod(fab: Fabric, t: Tally, tors: list, capacity: float, uplink_gbps: float) -> dict:
    """B3: one pod (pod 0), then HPN's step table."""
    p, sw = fab.params, fab.switches
    pod_aggs = [s for s in sw.values() if s.role == "agg" and s.pod == 0]
    planes = sorted({s.plane for s in pod_aggs})
    per_plane = one([sum(1 for s in pod_aggs if s.plane == k) for k in planes], "aggs per plane")
    agg_down = one([t.down_n[s.name] for s in pod_aggs], "aggregation down ports")
    agg_down_gbps = one([t.down_gbps[s.name] for s in pod_aggs], "aggregation down Gb/s")
    agg_up = one([t.up_n[s.name] for s in pod_aggs], "aggregation up ports")
    agg_up_gbps = one([t.up_gbps[s.name] for s in pod_aggs], "aggregation up Gb/s")
    up_source, up_how = "counted", "links to the core"
    agg_capacity = agg_down_gbps + agg_up_gbps
    agg_ports = agg_capacity / uplink_gbps                 # 400G ports the aggregation chip has
    cross_plane = sum(1 for l in fab.links if l.a in sw and sw[l.a].role == "tor"
                      and sw[l.b].role == "agg" and sw[l.a].plane != sw[l.b].plane)
    pod_gpus = sum(1 for h in fab.hosts.values() if h.pod == 0 and not is_backup(h, p)
                   for _ in h.nics)
    segments = len({s.coords[1] for s in tors if s.pod == 0})
    counted = {
        "segments_per_pod": entry("segments per pod", segments, 15),
        "planes": entry("aggregation planes", len(planes), 2),
        "aggs_per_plane": entry("aggregation switches per plane", per_plane, 60),
        "agg_down_ports": entry("aggregation ports down (400G)", agg_down, 120),
        "agg_up_ports": entry("aggregation ports up", agg_up, 8, source=up_source, how=up_how),
        "agg_up_gbps": entry("  rate of each up port", agg_up_gbps / agg_up, 400, unit="Gb/s",
                              source=up_source),
        "agg_oversubscription": entry("aggregation down:up toward the core",
                                       agg_down_gbps / agg_up_gbps, 15, unit=":1",
                                       source=up_source, digits=3),
        "agg_ports_400g": entry("aggregation ports at 400G", agg_ports, 128, source=up_source,
                                 how="(down + up Gb/s) / 400G"),
        "cross_plane_links": entry("ToR uplinks into the other plane", cross_plane, 0,
                                    how="dual-plane: none"),
        "gpus_per_pod": entry("active GPUs per pod", pod_gpus, 15000, nearest=1000,
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
        "step_plain_tier1": entry("step: plain 51.2T Clos, GPUs per ToR", plain_tier1, 64,
                                   source="derived",
                                   how=f"half of {capacity / 1000:g}T / {gpu_gbps:g}G per GPU"),
        "step_plain_pod": entry("step: plain 51.2T Clos, GPUs per pod", plain_pod, 2000,
                                 source="derived", nearest=1000,
                                 how="counted pod / (dual-ToR x dual-plane x 15:1); paper '2K'"),
        "step_dual_tor_tier1": entry("step: + dual-ToR, tier 1", plain_tier1 * dual_tor, 128,
                                      source="derived",
                                      how=f"x{dual_tor} (ports per NIC: each ToR carries half a NIC)"),
        "step_dual_tor_pod": entry("step: + dual-ToR, pod", plain_pod * dual_tor, 4096,
                                    source="derived", how=f"x{dual_tor} (ports per NIC)"),
        "step_rail_tier1": entry("step: + rail-optimized, tier 1",
                                  plain_tier1 * dual_tor * rail_opt, 1024, source="derived",
                                  how=f"x{rail_opt} (rails: one ToR pair per GPU index)"),
        "step_dual_plane_pod": entry("step: + dual-plane, pod",
                                      plain_pod * dual_tor * dual_plane, 8192, source="derived",
                                      how=f"x{dual_plane} (planes: a ToR needs only its plane's aggs)"),
        "step_freed_agg_ports": entry("step: aggregation ports freed by 15:1",
                                       half - agg_up, 56, source="derived",
                                       how=f"{half:g} up at 1:1 - {agg_up} up at 15:1 (paper: 64 - 8)"),
        "step_oversub_pod": entry("step: + 15:1 toward the core, pod",
                                   plain_pod * dual_tor * dual_plane * oversub, 15360,
                                   source="derived",
                                   how=f"x{agg_down}/{half:g} (aggregation ports down vs radix/2)"),
    }
