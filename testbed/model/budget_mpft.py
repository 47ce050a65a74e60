"""DeepSeek's multi-plane fat-tree at full scale (claim B4), counted from the built "paper" preset
(families/mpft.py)."""
from __future__ import annotations

from testbed.model.budget_entries import Tally, entry, one
from testbed.model.fabric import Fabric

# DeepSeek-V3 Table 3, quoting the Slim Fly paper's cost model: the model has no prices.
QUOTED_COST_KUSD = {"mpft": 4.39, "fat_tree_3tier": 7.5}


def count(fab: Fabric) -> dict:
    """B4 of a multi-plane fat-tree."""
    t = Tally(fab)
    sw = fab.switches
    planes = sorted({s.plane for s in sw.values()})
    leaves = [s for s in sw.values() if s.role == "leaf"]
    spines = [s for s in sw.values() if s.role == "spine"]
    def per_plane(group):
        return one([sum(1 for s in group if s.plane == k) for k in planes], "switches per plane")
    ports = one([fab.ports_of(s.name) for s in sw.values()], "ports per switch")
    rate = one([l.gbps for l in fab.links], "link rate")
    down = one([len(t.host_links[s.name]) for s in leaves], "hosts per leaf")
    endpoints = one([sum(len(t.host_links[s.name]) for s in leaves if s.plane == k)
                      for k in planes], "endpoints per plane")
    tiers = one([len({sw[n].tier for n in sw if sw[n].plane == k}) for k in planes],
                 "tiers per plane")
    plane_of = {n: s.plane for n, s in sw.items()}
    crossing = sum(1 for l in fab.links if l.a in sw and plane_of[l.a] != plane_of[l.b])
    nic_of_port = {port: nic for nic in fab.nics() for port in nic.ports}
    nic_in_own_plane = sum(1 for l in fab.links if l.a not in sw
                           and nic_of_port[l.a_intf].index == plane_of[l.b])
    leaves_pp, spines_pp = per_plane(leaves), per_plane(spines)
    b4 = {
        "switch_ports": entry("ports per switch", ports, 64),
        "link_gbps": entry("port rate", rate, 400, unit="Gb/s"),
        "tiers_per_plane": entry("tiers per plane", tiers, 2),
        "leaves_per_plane": entry("leaves per plane", leaves_pp, 64),
        "down_per_leaf": entry("ports down per leaf", down, 32),
        "endpoints_per_plane": entry("endpoints per plane", endpoints, 2048, how="64 x 32"),
        "spines_per_plane": entry("spines per plane", spines_pp, 32),
        "switches_per_plane": entry("switches per plane", leaves_pp + spines_pp, 96,
                                     how="64 + 32"),
        "planes": entry("planes", len(planes), 8),
        "gpus": entry("GPUs (one NIC each)", len(fab.nics()), 16384, how="8 x 2,048"),
        "switches": entry("switches", len(sw), 768, how="8 x 96"),
        "cross_plane_links": entry("links joining two planes", crossing, 0,
                                    how="planes share no switch"),
        "nics_in_own_plane": entry("NIC i cabled into plane i", nic_in_own_plane, 16384),
        "cost_mpft_kusd": entry("cost per endpoint, MPFT (as quoted)", QUOTED_COST_KUSD["mpft"],
                                 4.39, unit="k$", source="quoted",
                                 how="DeepSeek Table 3 quoting the Slim Fly cost model"),
        "cost_ft3_kusd": entry("cost per endpoint, three-tier fat-tree (as quoted)",
                                QUOTED_COST_KUSD["fat_tree_3tier"], 7.5, unit="k$",
                                source="quoted",
                                how="DeepSeek Table 3 quoting the Slim Fly cost model"),
    }
    return {"B4": b4}
