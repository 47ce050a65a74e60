"""C12 routing policy on RoCE: ECMP vs static vs adaptive for reduce-scatter at TP 2.

A leaf-spine plane (two leaves, two spines, two hosts per leaf: the uplinks exactly match the
hosts). Two TP-2 groups run a reduce-scatter at once, each between a host on leaf 0 and one on
leaf 1, so four flows cross the spines, two up from each leaf. Under ECMP the hash decides
whether a leaf's two flows share an uplink (then each gets half); `policy: static` is given the
traffic matrix and places the flows on disjoint links; `policy: adaptive` starts on ECMP and
moves a flow off a hot link (a controller loop, about a second: see testbed/model/policies).
Several rounds with different source ports; bus bandwidth as nccl-tests computes it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from testbed.core import progress
from testbed.emulation.build import Options
from testbed.emulation.factory import make_emulation
from testbed.measure.meters import cpu_busy_fraction
from testbed.scenario import plots
from testbed.scenario.base import Judgement, verdict
from testbed.scenario.knobs import Knobs
from testbed.scenario.traffic_helpers import LeafSpineScenario, pin_ports, setup_of
from testbed.workload import collectives as C

PAPER_ECMP, PAPER_BEST = 97, 190     # GB/s: DeepSeek-V3 Fig. 8, ECMP against adaptive/static routing
GROUPS = [("g0h0", "g1h0"), ("g0h1", "g1h1")]
MATRIX = [[a, b] for a, b in GROUPS] + [[b, a] for a, b in GROUPS]
POLICIES = {"ecmp": {"policy": "ecmp"},
            "static": {"policy": "static", "matrix": MATRIX},
            "adaptive": {"policy": "adaptive"}}


@dataclass(frozen=True)
class PolicyKnobs(Knobs):
    rounds: int = 3
    size: int = 10_000_000
    QUICK: ClassVar[dict] = {"rounds": 2, "size": 6_000_000}
    BOUNDS: ClassVar[dict] = {"rounds": (1, 50, "rounds"), "size": (100_000, 1_000_000_000, "bytes")}
    HELP: ClassVar[dict] = {"rounds": "rounds, each with new source ports",
                            "size": "reduce-scatter size (each rank sends half)"}


def reduce_scatters(emu, rounds: int, size: int) -> tuple[list, list]:
    """`rounds` rounds of both TP-2 groups' reduce-scatter at once: the mean bus bandwidth of each
    round (Mbit/s) and the CPU busy fraction."""
    bus, busy = [], []
    for r in progress.rounds(rounds):
        jobs = [pin_ports(C.reduce_scatter(emu.fabric, [a, b], size, job=f"tp2-{a}",
                                           sport_base=48000 + 100 * r + 10 * i), 9000 + 10 * r + i)
                for i, (a, b) in enumerate(GROUPS)]
        runs, b = cpu_busy_fraction(lambda jobs=jobs: C.run(emu, jobs))
        busy.append(b)
        bus.append(sum(x.busbw for x in runs) / len(runs) * 8 / 1e6)
    return bus, busy


class RoutingPolicies(LeafSpineScenario, name="routing-policies", claim="C12"):
    title = "ECMP vs static vs adaptive routing for reduce-scatter at TP 2"
    paper = ("DeepSeek-V3 Fig. 8: on RoCE, ECMP reaches about half the bandwidth of adaptive or static "
             "routing for reduce-scatter/all-gather at TP 2 (about 97 vs 190 GB/s)")
    Knobs = PolicyKnobs

    def run(self, quick: bool) -> dict:
        rounds, size = self.knobs.rounds, self.knobs.size     # each rank sends size/2
        figures, busy = {}, []
        setup = {"fabrics": {}, "size": size, "rounds": rounds, "x_label": "round",
                 "y_label": "bus bandwidth (Mbit/s)"}
        for name, routing in POLICIES.items():
            with make_emulation(self.fabric(), Options(routing=routing), servers=self.servers) as emu:
                bus, policy_busy = reduce_scatters(emu, rounds, size)
                busy += policy_busy
                figures[name] = {"busbw_mbit": [round(x, 3) for x in bus],
                                 "mean_busbw_mbit": round(sum(bus) / len(bus), 3)}
                setup["fabrics"][name] = setup_of(emu)
        series = {name: [[i + 1, x] for i, x in enumerate(figures[name]["busbw_mbit"])] for name in POLICIES}
        return {**figures, "cpu_busy": [round(x, 3) for x in busy], "setup": setup, "series": series}

    def judge(self, figures: dict) -> Judgement:
        e, s, a = (figures[k]["mean_busbw_mbit"] for k in ("ecmp", "static", "adaptive"))
        ok = e < 0.85 * s and a > 1.1 * e
        return Judgement(
            verdict(ok),
            expectation=("static keeps the four flows on disjoint links (full rate); ECMP stacks a leaf's "
                         "two flows on one uplink whenever the hash says so and averages lower (below 85% "
                         "of static); adaptive, a controller loop here, separates them after about a "
                         "second: above ECMP (by 10% or more), nearer static the longer the flows"),
            measured=(f"mean bus bandwidth over {figures['setup']['rounds']} rounds: ECMP {e} Mbit/s "
                      f"{figures['ecmp']['busbw_mbit']}, static {s}, adaptive {a} "
                      f"{figures['adaptive']['busbw_mbit']}; ECMP/static {e / s:.2f}"),
            headline=f"ECMP/static {e / s if s else 0:.2f}, adaptive/ECMP {a / e if e else 0:.2f}",
            busy=figures["cpu_busy"])

    def plot(self, result, path: Path) -> bool:
        """DeepSeek Fig. 8's form: bus bandwidth per routing policy (dots: rounds)."""
        figs = result.figures
        fig, ax = plots.figure(self, result, size=(7, 4.5))
        plots.bars(ax, ["reduce-scatter, TP 2"], {name: [figs[name]["busbw_mbit"]] for name in POLICIES},
                   "bus bandwidth (Mbit/s)")
        best = max(figs[name]["mean_busbw_mbit"] for name in POLICIES if name != "ecmp")
        plots.paper_value(ax, best * PAPER_ECMP / PAPER_BEST,
                          f"ECMP about half ({PAPER_ECMP} vs {PAPER_BEST} GB/s)",
                          span=plots.bar_span(0, list(POLICIES).index("ecmp"), len(POLICIES)))
        ax.legend(fontsize="small")
        ax.set_title("two TP-2 groups at once, leaf 0 to leaf 1 (dots: rounds)", fontsize=9)
        plots.save(fig, path)
        return True
