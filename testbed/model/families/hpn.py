"""Alibaba HPN: dual-ToR rail-optimized segments, a dual-plane aggregation tier, a 15:1 core.

Preset `segment` (emulated): one full HPN segment at its true host-side port count (HPN sec. 4):
136 hosts (8 of them backups) with 8 NICs each on 8 rails, every NIC dual-ported to its rail's
two ToRs: 16 ToRs, 1,088 NICs, 2,176 host links, one pod. The uplink tier is scaled down from
60 x 400G per ToR to 8 aggregation switches per plane, one uplink from every ToR to each of its
plane's 8, at 3,000 Gb/s each: 8 x 3,000 = 60 x 400 = 24 Tb/s, so each ToR keeps HPN's
oversubscription (27.2 / 24 = 1.133 with the backups, 1.067 without). A ToR needs 136 + 8 = 144
ports. Rates: 0.001 Mbit/s per paper Gb/s (a 200G host port becomes 0.2 Mbit/s): with every NIC
of the segment sending, the fabric's packets per second stay within what the userspace datapath
forwards on 2 cores.

Budget preset `paper` (counted, never emulated; budget_hpn.py): HPN sec. 3: a segment is 16 ToRs
(8 dual-ToR pairs, one per rail) under 136 hosts of 8 GPUs, 8 of the hosts spares; 200G per NIC
port, 60 x 400G up per ToR; a pod is 15 segments and 2 planes of 60 aggregation switches; each
aggregation switch has 120 ports down and 8 up toward a 15:1 core. pods=2 so that the core tier
exists at all.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from testbed.core.errors import ParamError
from testbed.model import budget_hpn
from testbed.model.fabric import Fabric, Switch
from testbed.model.families.family import Budget, Family, all_but_scale
from testbed.model.limits import Size
from testbed.model.params import BUNDLE_GBPS, HOSTS_PER_OCTET, IP_OCTET, OPENFLOW_PORTS, Params


@dataclass(frozen=True)
class HpnParams(Params):
    family: ClassVar[str] = "hpn"
    pods: int = 2
    segments: int = 1            # per pod
    hosts: int = 2               # per segment
    backup_hosts: int = 0        # of `hosts`, how many are spares (HPN keeps 8 per segment)
    nics: int = 2                # per host, one per GPU
    rails: int = 2               # ToR pairs per segment; NIC i is cabled to rail i % rails
    tors: int | None = None      # per segment; default 2 x rails (dual-ToR) or rails (single-ToR)
    single_tor: bool = False     # the baseline: each NIC has one port to one ToR
    dual_plane: bool | None = None   # default: on with dual-ToR
    aggs_per_plane: int = 2      # per pod
    cores: int = 2               # joins the pods; unused with one pod
    core_oversubscription: float = 15.0
    host_gbps: float = 200       # per NIC port
    uplink_gbps: float = 400     # ToR to aggregation

    BOUNDS = {
        **Params.BOUNDS,
        "pods": (1, IP_OCTET, "pod x segment numbers the third octet of a NIC's IP"),
        "segments": (1, IP_OCTET, "pod x segment numbers the third octet of a NIC's IP"),
        "hosts": (1, HOSTS_PER_OCTET, "per segment; the host is the last octet of its IPs"),
        "backup_hosts": (0, HOSTS_PER_OCTET - 1, "spares among the hosts of a segment"),
        "nics": (1, IP_OCTET, "the NIC is the second octet of its IP"),
        "rails": (1, IP_OCTET, "at most one per NIC"),
        "tors": (1, 2 * IP_OCTET, "rails x ports per NIC"),
        "aggs_per_plane": (1, OPENFLOW_PORTS, "each ToR cables to all of its plane's"),
        "cores": (0, OPENFLOW_PORTS, "each aggregation switch cables to all of them"),
        "core_oversubscription": (1, 1000, "aggregation down:up; 1 is non-blocking"),
        "uplink_gbps": BUNDLE_GBPS,
    }

    @property
    def ports_per_nic(self) -> int:
        return 1 if self.single_tor else 2

    @property
    def planes(self) -> int:
        return 2 if self.is_dual_plane else 1

    @property
    def is_dual_plane(self) -> bool:
        return (not self.single_tor) if self.dual_plane is None else self.dual_plane

    @property
    def tors_per_segment(self) -> int:
        return self.rails * self.ports_per_nic if self.tors is None else self.tors

    def rules(self) -> None:
        if self.rails > self.nics:
            raise ParamError(f"rails={self.rails}: more rails than a host has NICs (nics={self.nics})")
        if self.tors is not None:
            if not self.single_tor and self.tors % 2:
                raise ParamError(f"tors={self.tors}: dual-ToR needs an even number of ToRs "
                                 "(every NIC goes to a pair of independent ToRs)")
            if self.tors != self.rails * self.ports_per_nic:
                raise ParamError(f"tors={self.tors}: must be rails x ports per NIC = "
                                 f"{self.rails * self.ports_per_nic}")
        if self.single_tor and self.dual_plane:
            raise ParamError("dual_plane=true: needs dual-ToR (single_tor=false); the two planes "
                             "are the two ToRs of a pair")
        if self.backup_hosts >= self.hosts:
            raise ParamError(f"backup_hosts={self.backup_hosts}: must be fewer than hosts={self.hosts}")
        if self.pods * self.segments > IP_OCTET:
            raise ParamError(f"pods={self.pods} x segments={self.segments}: at most {IP_OCTET} "
                             "segments in all (a segment is the third octet of a NIC's IP)")
        if self.pods > 1 and self.cores < 1:
            raise ParamError(f"cores={self.cores}: more than one pod needs a core tier")

    # ---- the fabric by arithmetic (what build() makes, counted without building it) ----
    def _tier2_groups(self) -> int:
        """Sets of 2 x aggs_per_plane aggregation switches per pod, each under its own ToRs: one
        here (every ToR reaches its plane's); railonly has one per rail."""
        return 1

    def _aggs_per_pod(self) -> int:
        return self._tier2_groups() * 2 * self.aggs_per_plane

    def _tor_up(self) -> int:
        # dual-plane: a ToR reaches only the aggregation switches of its own plane
        return self.aggs_per_plane if self.is_dual_plane else 2 * self.aggs_per_plane

    def _agg_down(self) -> int:
        tors_per_group = self.segments * self.rails * self.ports_per_nic // self._tier2_groups()
        return tors_per_group // 2 if self.is_dual_plane else tors_per_group

    def _cores(self) -> int:
        return self.cores if self.pods > 1 else 0

    def ports(self) -> dict[str, tuple[int, int]]:
        nics_per_rail = -(-self.nics // self.rails)      # rail 0 has the most: ceil(nics / rails)
        ports = {"tor": (self.hosts * nics_per_rail, self._tor_up()),
                 "agg": (self._agg_down(), self._cores())}
        if self._cores():
            ports["core"] = (self.pods * self._aggs_per_pod(), 0)
        return ports

    def size(self) -> Size:
        tors = self.pods * self.segments * self.rails * self.ports_per_nic
        aggs = self.pods * self._aggs_per_pod()
        hosts = self.pods * self.segments * self.hosts
        nics = hosts * self.nics
        links = nics * self.ports_per_nic + tors * self._tor_up() + aggs * self._cores()
        return Size(switches=tors + aggs + self._cores(), hosts=hosts, nics=nics, links=links)

    def link_gbps(self) -> list[float]:
        rates = [self.host_gbps, self.uplink_gbps]
        if self._cores():   # build(): an uplink carries its share of the oversubscribed core
            rates.append(self._agg_down() * self.uplink_gbps / self.core_oversubscription / self.cores)
        return rates


def build(p: HpnParams) -> Fabric:
    return assemble(Fabric("hpn", p), p, add_aggregation)


def assemble(fab: Fabric, p: HpnParams, tier2) -> Fabric:
    """Each pod's segments, then its tier 2 (`tier2(fab, p, pod)`); then the core."""
    for pod in range(p.pods):
        add_segments(fab, p, pod)
        tier2(fab, p, pod)
    if p.pods > 1:
        add_core(fab, p)
    return fab


def add_segments(fab: Fabric, p: HpnParams, pod: int) -> None:
    """The segments of `pod`: per rail a ToR pair (one ToR single-ToR), hosts under them."""
    sides = range(p.ports_per_nic)
    for seg in range(p.segments):
        tors = {(rail, side): fab.add_switch(f"p{pod}s{seg}r{rail}t{side}", "tor",
                                             (pod, seg, rail, side), plane=side, pod=pod)
                for rail in range(p.rails) for side in sides}
        group = pod * p.segments + seg
        for i in range(p.hosts):
            host = fab.add_host(f"p{pod}s{seg}h{i}", (pod, seg, i),
                                [n % p.rails for n in range(p.nics)], p.ports_per_nic,
                                lambda n, i=i, group=group: f"10.{n}.{group}.{i + 1}", pod=pod)
            for nic in host.nics:
                for side in sides:   # port k of a NIC goes to ToR k of its rail's pair
                    fab.attach(nic, side, tors[(nic.rail, side)], p.host_gbps)


def pod_tors(fab: Fabric, pod: int) -> list:
    return [s for s in fab.switches.values() if s.role == "tor" and s.pod == pod]


def add_aggregation(fab: Fabric, p: HpnParams, pod: int) -> None:
    """HPN's tier 2: every ToR of the pod to all aggregation switches of its plane."""
    add_agg_set(fab, p, pod, pod_tors(fab, pod), f"p{pod}", (pod,))


def add_agg_set(fab: Fabric, p: HpnParams, pod: int, tors: list, prefix: str,
                coords: tuple[int, ...]) -> None:
    """2 x aggs_per_plane aggregation switches {prefix}a{plane}n{i} at coords + (plane, i), each
    cabled to every ToR of `tors` (dual-plane: of its plane only)."""
    aggs = [fab.add_switch(f"{prefix}a{plane}n{i}", "agg", (*coords, plane, i),
                           plane=plane if p.is_dual_plane else None, pod=pod)
            for plane in range(2) for i in range(p.aggs_per_plane)]
    for tor in tors:
        for agg in aggs:
            # dual-plane: a ToR reaches only the aggregation switches of its own plane
            if not p.is_dual_plane or fab.switches[agg].plane == tor.plane:
                fab.connect(tor.name, agg, p.uplink_gbps)


def add_core(fab: Fabric, p: HpnParams) -> None:
    """The core joins every aggregation switch of every pod; the oversubscription sets the rate
    of each uplink."""
    cores = [fab.add_switch(f"c{i}", "core", (i,)) for i in range(p.cores)]
    down = {s.name: 0.0 for s in fab.switches.values() if s.role == "agg"}
    for l in fab.switch_links():
        down[l.b] = down.get(l.b, 0.0) + l.gbps
    for agg in [s for s in fab.switches if fab.switches[s].role == "agg"]:
        for core in cores:
            fab.connect(agg, core, down[agg] / p.core_oversubscription / p.cores)


# ---- what the testbed asks of the family besides its fabric ----

def segment_unit(fab: Fabric, node: str) -> str | None:
    """Placement of a fabric built of HPN segments (hpn, railonly): a segment (its ToRs and hosts:
    every NIC port is cabled to a ToR of its own segment); aggregation and core are the top."""
    if node in fab.hosts:
        coords = fab.hosts[node].coords
        return f"p{coords[0]}s{coords[1]}"
    sw = fab.switches[node]
    return f"p{sw.coords[0]}s{sw.coords[1]}" if sw.role == "tor" else None


def by_plane(fab: Fabric, s: Switch) -> tuple[int, str] | None:
    """Drawing: by plane (the ToR side of a pair), by rail single-ToR; the core is shared."""
    p = fab.params
    if s.role == "core":
        return None
    if p.single_tor:                      # one ToR per rail: colour by rail
        return (s.coords[2], f"rail {s.coords[2]}") if s.role == "tor" else None
    if s.plane is None:                   # dual-ToR without dual-plane: aggs are shared
        return None
    what = "plane" if p.is_dual_plane else "ToR side"
    return s.plane, f"{what} {s.plane}"


def title(p: HpnParams) -> dict[str, object]:
    """The picture's title: planes and ToRs per segment as built, not the `tors` override."""
    shown = all_but_scale(p)
    shown["planes"] = p.planes
    shown["ToRs/segment"] = p.tors_per_segment
    shown.pop("tors", None)
    return shown


SEGMENT = {"pods": 1, "segments": 1, "hosts": 136, "backup_hosts": 8, "nics": 8, "rails": 8,
           "aggs_per_plane": 8, "uplink_gbps": 3000, "radix": 144, "scale": 0.001}
PAPER = {"pods": 2, "segments": 15, "hosts": 136, "backup_hosts": 8, "nics": 8, "rails": 8,
         "aggs_per_plane": 60, "cores": 8, "core_oversubscription": 15.0,
         "host_gbps": 200, "uplink_gbps": 400,
         # the model's radix counts cables: a ToR uses 136 split 200G ports + 60 up,
         # and with 2 pods a core switch takes 2 x 120 aggregation uplinks
         "radix": 256}

HPN = Family("hpn", HpnParams, build, segment_unit, presets={"segment": SEGMENT},
             budget=Budget(("B1", "B2", "B3"), {"paper": PAPER}, budget_hpn.count),
             # HPN's core uses per-port rules (HPN sec. 6); the other families hash at every tier
             default_core="per-port", group=by_plane, title=title)
