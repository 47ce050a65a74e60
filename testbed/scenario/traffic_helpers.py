"""Helpers the traffic scenarios share: setup records, traces per flow, pinned ports."""
from __future__ import annotations

import dataclasses
import statistics
from typing import ClassVar

from testbed.scenario.base import Scenario
from testbed.workload.collectives import Collective


def setup_of(emu, **extra) -> dict:
    p = emu.fabric.params
    return {"family": emu.fabric.family, "params": dataclasses.asdict(p),
            "datapath": emu.datapath, "cpu_precedence": emu.state.data["about"].get("cpu_precedence"),
            "routing": emu.options.routing, "mtu": emu.mtu,
            "queue_bytes": emu.options.queue_bytes, "ovs_send_buffer": emu.send_buffer, **extra}


def pin_ports(coll: Collective, dport_base: int) -> Collective:
    """Give every transfer a fixed server port (unique per destination and phase) so that its
    5-tuple, hence its hashed path, is known before it runs (and traces can follow it)."""
    used: dict[tuple, int] = {}
    out = []
    for t in coll.transfers:
        key = (t.dst.ip, t.phase)
        used[key] = used.get(key, 0) + 1
        out.append(dataclasses.replace(t, dport=t.dport or dport_base + used[key] - 1))
    return dataclasses.replace(coll, transfers=tuple(out))


def mbit(nbytes: float, seconds: float) -> float:
    return nbytes * 8 / 1e6 / seconds if seconds > 0 else 0.0


def median(xs):
    return statistics.median(xs) if xs else 0.0


def uplinks(fabric, lower_prefix: str, upper_role: str) -> list:
    """Links from switches whose name starts with `lower_prefix` to switches of `upper_role`."""
    return [l for l in fabric.switch_links()
            if l.a.startswith(lower_prefix) and fabric.switches[l.b].role == upper_role]


class LeafSpineScenario(Scenario):
    """disjoint-paths and routing-policies: two jobs from leaf 0 to leaf 1 of one leaf-spine plane
    (MPFT with one plane), with two spines to choose from."""
    families = ("mpft",)
    base: ClassVar[dict] = {"planes": 1, "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                            "scale": 0.02}    # 400G -> 8 Mbit/s

    def meaningful(self) -> None:
        p = self.fabric().params
        if p.spines < 2 or p.leaves < 2 or p.hosts_per_leaf < 2:
            self.refuse(f"spines={p.spines}, leaves={p.leaves}, hosts_per_leaf={p.hosts_per_leaf}: "
                        "needs 2 or more of each: two jobs, leaf 0 to leaf 1, with two spines to choose from")
