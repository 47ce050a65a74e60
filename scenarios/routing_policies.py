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

from scenarios.base import Result, Scenario, verdict
from scenarios.common import pin_ports, setup_of, valid
from testbed.emulation.build import Emulation, Options
from testbed.measure.meters import cpu_busy_fraction
from testbed.model import make_fabric
from testbed.workload import collectives as C

SCALE = 0.02        # 400G -> 8 Mbit/s
PARAMS = {"planes": 1, "leaves": 2, "spines": 2, "hosts_per_leaf": 2, "scale": SCALE}
GROUPS = [("g0h0", "g1h0"), ("g0h1", "g1h1")]


class RoutingPolicies(Scenario):
    name = "routing-policies"
    claim = "C12"
    title = "ECMP vs static vs adaptive routing for reduce-scatter at TP 2"
    paper = ("DeepSeek-V3 Fig. 8: on RoCE, ECMP reaches about half the bandwidth of adaptive or static "
             "routing for reduce-scatter/all-gather at TP 2 (about 97 vs 190 GB/s)")

    def measure(self, quick: bool) -> Result:
        rounds = 2 if quick else 3
        size = 6_000_000 if quick else 10_000_000     # each rank sends size/2
        matrix = [[a, b] for a, b in GROUPS] + [[b, a] for a, b in GROUPS]
        policies = {"ecmp": {"policy": "ecmp"},
                    "static": {"policy": "static", "matrix": matrix},
                    "adaptive": {"policy": "adaptive"}}
        figures, busy, series, setups = {}, [], {}, {}
        for name, routing in policies.items():
            with Emulation(make_fabric("mpft", PARAMS), Options(routing=routing)) as emu:
                fab = emu.fabric
                bus = []
                for r in range(rounds):
                    jobs = [pin_ports(C.reduce_scatter(fab, [a, b], size, job=f"tp2-{a}",
                                                       sport_base=48000 + 100 * r + 10 * i), 9000 + 10 * r + i)
                            for i, (a, b) in enumerate(GROUPS)]
                    runs, b = cpu_busy_fraction(lambda: C.run(emu, jobs))
                    busy.append(b)
                    bus.append(sum(x.busbw for x in runs) / len(runs) * 8 / 1e6)
                figures[name] = {"busbw_mbit": [round(x, 3) for x in bus],
                                 "mean_busbw_mbit": round(sum(bus) / len(bus), 3)}
                series[name] = [[i + 1, round(x, 3)] for i, x in enumerate(bus)]
                setups[name] = setup_of(emu)
        e, s, a = (figures[k]["mean_busbw_mbit"] for k in ("ecmp", "static", "adaptive"))
        ok = e < 0.85 * s and a > 1.1 * e
        return Result(
            self.name, self.claim, self.paper,
            expectation=("static keeps the four flows on disjoint links (full rate); ECMP stacks a leaf's two "
                         "flows on one uplink whenever the hash says so and averages lower (below 85% of "
                         "static); adaptive, a controller loop here, separates them after about a second: "
                         "above ECMP (by 10% or more), nearer static the longer the flows"),
            measured=(f"mean bus bandwidth over {rounds} rounds: ECMP {e} Mbit/s {figures['ecmp']['busbw_mbit']}, "
                      f"static {s}, adaptive {a} {figures['adaptive']['busbw_mbit']}; ECMP/static "
                      f"{e / s:.2f}"),
            verdict=verdict(ok, valid(*busy)),
            figures={**figures, "cpu_busy": [round(x, 3) for x in busy]},
            setup={"fabrics": setups, "size": size, "rounds": rounds, "x_label": "round",
                   "y_label": "bus bandwidth (Mbit/s)"},
            series=series)


SCENARIO = RoutingPolicies
