"""C14 RoCE entropy: few queue pairs hash onto few uplinks; more QPs per connection spread them.

RoCE v2 is UDP to port 4791 with a source port set per queue pair (QP), so a NCCL connection
on one QP is one 5-tuple and one ECMP path, however much it carries (case study 002: one spine
link at 95% while another sat at 22%). Meta (SIGCOMM'24) hashed on the QP and opened more QPs
per connection: up to +40% AllReduce.

A leaf/spine (mpft with one plane: `leaves` x `hosts_per_leaf` hosts, `spines` spines, seeded
ECMP: a hash basis per switch) runs a ring AllReduce over every host, ordered so that every hop
crosses the spines (leaf 0's host 0, leaf 1's host 0, ..., leaf 0's host 1, ...). Each ring hop is
one connection split evenly over q QPs (NCCL_IB_SPLIT_DATA_ON_QPS), each QP a paced UDP flow
to port 4791 from a source port of its own in RoCE's range (49152-65535), drawn at random per
round as the kernel derives it from fresh QP numbers (testbed/workload/paced.py: one process
for every flow). A QP is paced at its share of the NIC's lossless rate (`pace` x line rate / q):
what the sender offers if nothing in the fabric holds it back.

Where ECMP puts more QPs on a port than it carries, the excess is dropped here, where a lossless
fabric's flow control (PFC) would hold the senders back instead; and drop-tail shares a full
port unevenly between paced senders (their datagrams keep their phase against the queue; how
unevenly: docs/claims.md, C14). So the completion is that of a
lossless fabric, from what was measured: the path each QP's 5-tuple takes (traced from the
switches, and confirmed by the uplinks' port counters: an uplink carrying more than its traced QPs
offer makes the run invalid) and the rate each overloaded uplink delivered; the fluid model
(testbed/model/fluid.py, max-min fair, recomputed as QPs finish) moves every QP's share of the
AllReduce, 2(n-1)/n x size / q, over those ports (`completion_s`). The same with the ports at
their nominal rates is `traced_s`; further than 25% apart, the emulator did not keep the rates.
Per QP count and round: the uplinks' utilization and shares, the QPs' delivered rates (lowest
and highest: the drop-tail unevenness), the completion.

Rates: the userspace datapath forwards every switch in one thread, and each datagram crosses three
switches here; at 8 Mbit/s host ports (scale 0.02) that thread ran short now and then, and ports
with room carried less than their QPs offered (the uplink check caught it), so host ports and
uplinks run at 4 Mbit/s (scale 0.01, 400G -> 4 Mbit/s).

The max-min-fair prediction (`ideal_s`): the same ring with every connection spread evenly over
every equal-cost path, the limit that hashing more QPs approaches.

Expected, from 10,000 random draws of the same hashing (docs/claims.md, C14): with one QP an
uplink carries two or three connections while another is idle, and the ring runs about 2x the
prediction; at 8 QPs about 1.3x, a gain of about +60% (Meta: up to +40%).

Then Meta's path-pinning baseline, a part of the same run (pinning.py): static routes by
destination on a partly allocated fabric (fewer spines than hosts per leaf, a job on some of
them) against the same ring with its QPs hashed; the verdict is reproduced when both parts are.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from testbed.core import progress
from testbed.core.errors import ParamError
from testbed.emulation.build import Options
from testbed.emulation.factory import make_emulation
from testbed.emulation.trace import emulation_trace
from testbed.measure import validity
from testbed.measure.meters import cpu_busy_fraction, port_bytes
from testbed.model import fluid
from testbed.model.paths import port_rates, sending_ports
from testbed.scenario.base import INVALID, REPRODUCED, Judgement, Scenario, verdict
from testbed.scenario.knobs import Knobs
from testbed.scenario.traffic_helpers import setup_of
from testbed.workload.paced import SIZE, PacedFlow, PacedLoad

from .figure import draw
from .pinning import PIN_SPINES, judge_pinning, run_pinning
from .ring import (
    META_GAIN,
    META_PIN_LOSS,
    ROCE_PORT,
    draw_sports,
    finite,
    ideal_seconds,
    link_load,
    ring_hops,
    ring_order,
    shares,
)
from .rows import summary, trusted

SLOWER = 1.3          # one QP: the ring at least this much slower than the prediction
GAIN = 1.15           # the most QPs against one: at least this much faster
CLOSER = 0.75         # ... and at most this share of one QP's excess over the prediction left
BUSIEST = 3.0         # one QP: the busiest uplink at least this many times the least busy
CONVERGE = 0.6        # the most QPs: the uplinks' spread at most this share of one QP's
HEADERS = 42          # Ethernet, IPv4 and UDP headers: the port counters count them


@dataclass(frozen=True)
class EntropyKnobs(Knobs):
    qps: tuple[int, ...] = (1, 2, 4, 8)
    rounds: int = 6               # hash draws per QP count, fresh source ports each
    seconds: float = 4.0          # of traffic per draw
    pace: float = 0.9             # of the NIC's line rate, shared by its QPs
    size: int = 4_000_000         # AllReduce bytes per rank (scales the completion times only)
    seed: int = 0                 # 0: fresh QP numbers every run; N: the same draws every run
    pin_qps: int = 16             # the pinning part: QPs per connection (pinned and spread alike)
    pin_rounds: int = 2           # ... hash draws when spread (0: no pinning part)
    QUICK: ClassVar[dict] = {"rounds": 4, "seconds": 2.0}
    BOUNDS: ClassVar[dict] = {"qps": (1, 16, "QPs per connection"), "rounds": (1, 20, "draws"),
                              "seconds": (1.0, 60.0, "seconds"), "pace": (0.1, 1.0, "of line rate"),
                              "size": (10_000, 1_000_000_000, "bytes"), "seed": (0, 2**31, "seed"),
                              "pin_qps": (1, 16, "QPs per connection"), "pin_rounds": (0, 20, "draws")}
    HELP: ClassVar[dict] = {"qps": "QPs per connection to sweep (the first and last are compared)",
                            "rounds": "hash draws per QP count", "seconds": "s of traffic per draw",
                            "pace": "each NIC's offered rate, of its line rate",
                            "size": "AllReduce bytes per rank", "seed": "0: fresh draws every run",
                            "pin_qps": "QPs per connection in the pinning part",
                            "pin_rounds": "ECMP draws in the pinning part (0: skip it)"}

    def rules(self) -> None:
        if len(self.qps) < 2 or list(self.qps) != sorted(set(self.qps)):
            raise ParamError(f"qps={','.join(map(str, self.qps))}: two or more QP counts, ascending")


class RoceEntropy(Scenario, name="roce-entropy", claim="C14", tour=False):
    title = "RoCE entropy: queue pairs per connection against ECMP"
    paper = ("case study 002 sec. 4.1: RoCE's near-identical 5-tuples (UDP to 4791, few QPs) hashed most "
             "NCCL traffic onto one spine link, 95% busy while another sat at 22%; Meta (SIGCOMM'24): "
             "hashing on the QP with more QPs per connection, up to +40% AllReduce; pinning paths per "
             "destination lost >30% on partly allocated racks")
    families = ("mpft",)
    base: ClassVar[dict] = {"planes": 1, "leaves": 2, "spines": 4, "hosts_per_leaf": 4, "scale": 0.01}
    fixed: ClassVar[dict] = {"planes": "one leaf/spine plane: the ring runs on every host's NIC 0"}
    Knobs = EntropyKnobs

    def meaningful(self) -> None:
        p = self.fabric().params
        if p.leaves < 2 or p.spines < 2 or p.hosts_per_leaf < 1:
            self.refuse(f"leaves={p.leaves}, spines={p.spines}: needs 2 or more of each, so that every "
                        "ring hop crosses the spines and ECMP has a choice")
        if self.knobs.pin_rounds and p.hosts_per_leaf <= PIN_SPINES:
            self.refuse(f"hosts_per_leaf={p.hosts_per_leaf}: the pinning part needs more hosts per leaf "
                        f"than its {PIN_SPINES} spines (or pin_rounds=0)")

    def run(self, quick: bool) -> dict:
        k = self.knobs
        fab = self.fabric()
        hops = ring_hops(ring_order(fab))
        n = len(hops)
        per_hop_mbit = 2 * (n - 1) / n * k.size * 8 / 1e6
        line = fab.line_mbit(hops[0][0])
        rng = random.Random(k.seed or None)
        figures = {"setup": {"hosts": n, "ring": [s.name for s, _ in hops], "line_mbit": line,
                             "per_hop_mbit": round(per_hop_mbit, 3)},
                   "ideal_s": round(ideal_seconds(fab, hops, per_hop_mbit, k.pace * line), 4),
                   "qps": {}, "series": {}}
        with make_emulation(fab, Options(routing={"ecmp": "seeded"}), servers=self.servers) as emu:
            figures["setup"]["fabric"] = setup_of(emu)
            for q in k.qps:
                rounds = [self.one_draw(emu, hops, draw_sports(rng, n, q), per_hop_mbit / q)
                          for _ in progress.rounds(k.rounds, f"{q} QPs: draw")]
                figures["qps"][str(q)] = summary(rounds, figures["ideal_s"])
        if k.pin_rounds:
            figures["pinning"] = run_pinning(self, rng)
        return figures

    def judge(self, figures: dict) -> Judgement:
        return judge_entropy(figures)

    def plot(self, result, path: Path) -> bool:
        draw(self, result, path)
        return True

    def uplinks(self, fab) -> dict[str, list[str]]:
        """Each leaf's uplink interfaces (what they send goes up to the spines)."""
        out: dict[str, list[str]] = {}
        for link in fab.switch_links():
            if fab.switches[link.a].role == "leaf":
                out.setdefault(link.a, []).append(link.a_intf)
        return out

    def one_draw(self, emu, hops: list[tuple], sports: list[list[int]], qp_mbit: float) -> dict:
        """One round: every QP traced, the ring run as paced UDP for `seconds`, its figures."""
        k, fab = self.knobs, emu.fabric
        rate = k.pace * fab.line_mbit(hops[0][0]) * 1e6 / 8 / len(sports[0])
        flows = [PacedFlow(src, dst, sp, src.ports[0], rate, ROCE_PORT)
                 for (src, dst), ports in zip(hops, sports) for sp in ports]
        paths = [sending_ports(fab, emulation_trace(emu, f.src, f.dst, proto="udp", sport=f.sport,
                                                    dport=ROCE_PORT)) for f in flows]
        demand = rate * 8 / 1e6
        offered = link_load(paths, demand)
        uplinks = self.uplinks(fab)
        intfs = sorted(set(offered) | {i for ups in uplinks.values() for i in ups})
        load = PacedLoad(emu, flows, k.seconds, count=True)
        before = port_bytes(emu, intfs)
        counts, busy = cpu_busy_fraction(lambda: load.start().finish())
        after = port_bytes(emu, intfs)
        mbit = {i: (after[i] - before[i]) * 8 / 1e6 / k.seconds * SIZE / (SIZE + HEADERS) for i in intfs}
        rates = port_rates(fab)
        overloaded = [i for ups in uplinks.values() for i in ups
                      if offered.get(i, 0.0) > rates[i] * (1 + fluid.EPS)]
        measured = {**rates, **{i: mbit[i] for i in overloaded}}
        sizes, demands = [qp_mbit] * len(flows), [demand] * len(flows)
        delivered = [n * SIZE * 8 / 1e6 / k.seconds for n in load.received]
        return {"sports": [sp for ports in sports for sp in ports],
                "paths": sorted(map(list, {tuple(p) for p in paths})),
                "uplink_util": {i: round(mbit[i] / rates[i], 3) for ups in uplinks.values() for i in ups},
                "uplink_expected": {i: round(min(offered.get(i, 0.0), rates[i]) / rates[i], 3)
                                    for ups in uplinks.values() for i in ups},
                "uplink_share": {leaf: shares([mbit[i] for i in ups]) for leaf, ups in uplinks.items()},
                "completion_s": finite(fluid.makespan(measured, paths, sizes, demands)),
                "traced_s": round(fluid.makespan(rates, paths, sizes, demands), 4),
                "qp_delivered_mbit": [round(min(delivered), 4), round(max(delivered), 4)],
                "sent_fraction": round(sum(s for s, _ in counts) * SIZE / (rate * k.seconds * len(flows)), 3),
                "cpu_busy": round(busy, 3)}


def comparison(figures: dict) -> dict:
    """The fewest and most QPs compared: slowdowns against the prediction, gain, spreads."""
    counts = sorted(figures["qps"], key=int)
    one, most = figures["qps"][counts[0]], figures["qps"][counts[-1]]
    gain = one["completion_s"] / most["completion_s"]
    excess = one["over_ideal"] - 1
    return {"fewest": counts[0], "most": counts[-1], "one": one, "many": most, "gain": round(gain, 3),
            "excess_left": round((most["over_ideal"] - 1) / excess, 3) if excess > 0 else None,
            "busiest_over_least": round(one["busiest_util"] / one["least_util"], 2)
            if one["least_util"] > 0 else None}     # None: the least busy uplink was idle


def row_text(q: str, row: dict) -> str:
    over = f"{row['over_ideal']:.2f}x" if row["over_ideal"] else "never done"
    return (f"{q} QP: uplinks {row['busiest_util']:.0%} busiest / {row['least_util']:.0%} least busy, "
            f"spread {row['spread']:.2f}, ring {row['completion_s']} s ({over}; traced paths' model "
            f"{row['traced_s']} s; uplinks with room short of their offer by up to "
            f"{row.get('uplink_shortfall', 0):.0%})")


def judge_entropy(figures: dict) -> Judgement:
    """The verdict on a run's figures (RoceEntropy.judge): the QP sweep's, and the pinning
    part's when it ran; reproduced when both are, invalid when either is."""
    qps = judge_qps(figures)
    if "pinning" not in figures:
        return qps
    pin = judge_pinning(figures["pinning"])
    cpu = [figures["pinning"][name]["cpu_busy"] for name in ("pinned", "spread")]
    why = pin["why"] or (validity.cpu(*cpu).why or "").replace("CPU", "the pinning part's CPU", 1)
    expectation = (f"{qps.expectation}. Pinning: with paths pinned per destination on the partly allocated "
                   f"fabric ({PIN_SPINES} spines), the ring at least {META_PIN_LOSS:.0%} slower than with "
                   f"its QPs hashed (Meta: >{META_PIN_LOSS:.0%} lost)")
    lost = f"pinning lost {pin['loss']:.0%}" if pin["loss"] is not None else "pinning part invalid"
    return Judgement(verdict(qps.verdict == REPRODUCED and pin["ok"], qps.verdict != INVALID and not why),
                     expectation,
                     measured=f"{qps.measured}; pinning part: {pin['text']}"
                              + (f"; invalid: {why}" if why else ""),
                     derived={**qps.derived, "pinning_loss": pin["loss"]},
                     headline=f"{qps.headline}; {lost} (Meta >{META_PIN_LOSS:.0%})")


def judge_qps(figures: dict) -> Judgement:
    """The QP sweep's verdict."""
    ideal = figures["ideal_s"]
    expectation = (f"max-min-fair prediction {ideal} s (every connection spread evenly over every spine); "
                   f"with the fewest QPs the ring at least {SLOWER}x it and the busiest uplink at least "
                   f"{BUSIEST:g}x the least busy; with the most QPs at least {GAIN}x faster (Meta: up to "
                   f"{META_GAIN}x), at most {CLOSER:.0%} of the excess left and the uplinks' spread at most "
                   f"{CONVERGE:.0%} of the fewest's")
    why = trusted(figures["qps"])
    cpu = [row["cpu_busy"] for row in figures["qps"].values()]
    rows = "; ".join(row_text(q, row) for q, row in sorted(figures["qps"].items(), key=lambda kv: int(kv[0])))
    if why or not validity.cpu(*cpu).valid:
        return Judgement(verdict(False, False), expectation, f"{rows}; invalid: {why}" if why else rows,
                         headline=why or "")
    c = comparison(figures)
    one, many = c["one"], c["many"]
    left = f"{c['excess_left']:.0%}" if c["excess_left"] is not None else "all"
    ok = (one["over_ideal"] >= SLOWER and one["busiest_util"] >= BUSIEST * one["least_util"]
          and c["gain"] >= GAIN and c["excess_left"] is not None and c["excess_left"] <= CLOSER
          and many["spread"] <= CONVERGE * one["spread"])
    return Judgement(
        verdict(ok), expectation,
        measured=f"{rows}; {c['most']} QPs against {c['fewest']}: {c['gain'] - 1:+.0%} (Meta: up to "
                 f"{META_GAIN - 1:+.0%}), {left} of the excess left",
        derived={"gain": c["gain"], "excess_left": c["excess_left"],
                 "busiest_over_least": c["busiest_over_least"]},
        headline=f"{c['fewest']} QP {one['over_ideal']:.2f}x the prediction (uplinks "
                 f"{one['busiest_util']:.0%}"
                 f"/{one['least_util']:.0%}), {c['most']} QPs {many['over_ideal']:.2f}x: "
                 f"{c['gain'] - 1:+.0%} "
                 f"(Meta {META_GAIN - 1:+.0%})")


