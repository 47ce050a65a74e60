"""C1 hash polarization: identical hashing at successive tiers repeats a collision.

A three-tier Clos (clos3), once with one hash basis on every switch (`polarized`, a fabric of one
ASIC) and once with a basis per switch (`seeded`). The same cross-pod send/recv (every pod-0 host
to its pod-1 partner over several connections with pinned 5-tuples) runs on both:
- traces read from the switches: of the pairs of flows that share an edge uplink (tier 1), how
  many share an aggregation uplink (tier 2) again;
- port counters on pod 0's aggregation-to-core uplinks: polarized hashing can only use the
  uplink with the index the edge chose, so some core uplinks stay idle;
- the collective's completion time.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import ClassVar

from scenarios.kit import plots
from scenarios.kit.base import Judgement, Scenario, verdict
from scenarios.kit.knobs import Knobs
from scenarios.kit.traffic_helpers import pin_ports, setup_of, uplinks, valid
from testbed.emulation.build import Options
from testbed.emulation.factory import make_emulation
from testbed.emulation.trace import emulation_trace
from testbed.measure.meters import cpu_busy_fraction, imbalance
from testbed.workload import collectives as C

MODES = ("polarized", "seeded")


@dataclass(frozen=True)
class PolarizationKnobs(Knobs):
    bytes_per_flow: int = 400_000
    connections: int = 4          # per host pair
    QUICK: ClassVar[dict] = {"bytes_per_flow": 150_000}
    BOUNDS: ClassVar[dict] = {"bytes_per_flow": (10_000, 100_000_000, "bytes"), "connections": (1, 16, "per host pair")}
    HELP: ClassVar[dict] = {"bytes_per_flow": "bytes each connection sends", "connections": "connections per host pair"}


def tier_uplinks(emu, coll) -> list[tuple]:
    """The tier-1 and tier-2 uplinks ((switch, port), (switch, port)) of every transfer, traced."""
    paths = []
    for t in coll.transfers:
        hops = emulation_trace(emu, t.src, t.dst, sport=t.sport, dport=t.dport)
        paths.append(((hops[0].switch, hops[0].out_port), (hops[1].switch, hops[1].out_port)))
    return paths


def collisions(paths) -> tuple[int, int]:
    """Pairs of flows sharing a tier-1 uplink, and how many of those share a tier-2 uplink again."""
    shared1 = [(a, b) for a, b in combinations(range(len(paths)), 2) if paths[a][0] == paths[b][0]]
    return len(shared1), sum(1 for a, b in shared1 if paths[a][1] == paths[b][1])


def shares(loads: list) -> list[float]:
    total = sum(loads)
    return [round(x / total, 3) if total else 0 for x in loads]


class HashPolarization(Scenario, name="hash-polarization", claim="C1", tour=True):
    title = "hash polarization on a three-tier Clos"
    paper = ("HPN sec. 1, case study 002 sec. 4.1: ECMP collides elephant flows and hashing alike at "
             "successive tiers repeats the collision (one spine link at 95% while another sits at 22%)")

    families = ("clos3",)
    Knobs = PolarizationKnobs

    def meaningful(self) -> None:
        p = self.fabric().params
        if p.pods < 2:
            self.refuse("needs pods >= 2: pod 0 sends to pod 1 across the core")
        if p.aggs < 2 or p.aggs != p.cores:
            self.refuse(f"aggs={p.aggs}, cores={p.cores}: needs aggs = cores >= 2, so that both tiers "
                        "hash among as many next hops and a polarized hash repeats its choice")

    def run(self, quick: bool) -> dict:
        per_flow = self.knobs.bytes_per_flow
        figures = {"setup": {"fabrics": {}, "bytes_per_flow": per_flow,
                             "connections_per_pair": self.knobs.connections,
                             "x_label": "pod-0 aggregation-to-core uplink", "y_label": "Mbit/s"},
                   "series": {}}
        for mode in MODES:
            with make_emulation(self.fabric(), Options(routing={"ecmp": mode})) as emu:
                figures[mode], figures["series"][f"{mode}: core uplink load (Mbit/s)"] = \
                    self.sendrecv(emu, mode, per_flow)
                figures["setup"]["fabrics"][mode] = setup_of(emu)
        return figures

    def sendrecv(self, emu, mode: str, per_flow: int) -> tuple[dict, list]:
        """Pod 0 to pod 1 on one fabric: collisions by trace, core uplink loads, completion."""
        fab = emu.fabric
        pod0 = sorted(h for h in fab.hosts if h.startswith("p0"))
        pod1 = sorted(h for h in fab.hosts if h.startswith("p1"))
        channels = self.knobs.connections
        coll = pin_ports(C.pipeline(fab, [pod0, pod1], size=per_flow * channels, channels=channels,
                                    sport_base=42000, job=f"sendrecv-{mode}"), dport_base=6000)
        paths = tier_uplinks(emu, coll)
        pairs, again = collisions(paths)
        core, edge = uplinks(fab, "p0a", "core"), uplinks(fab, "p0e", "agg")
        with emu.sampler([l.a_intf for l in core + edge], interval=0.1) as sampler:
            (result,), busy = cpu_busy_fraction(lambda: C.run(emu, coll))
        core_load = [sampler.sent(l.a_intf) for l in core]
        total = sum(core_load)
        figures = {"flows": len(paths), "pairs_sharing_tier1": pairs, "of_which_share_tier2": again,
                   "repeat_fraction": round(again / pairs, 3) if pairs else 0.0,
                   "core_uplink_bytes": dict(zip((l.a_intf for l in core), core_load)),
                   "core_uplink_share": shares(core_load),
                   "idle_core_uplinks": sum(1 for x in core_load if total and x < 0.05 * total / len(core)),
                   "core_imbalance": imbalance([float(x) for x in core_load]),
                   "edge_uplink_share": shares([sampler.sent(l.a_intf) for l in edge]),
                   "completion_s": round(result.seconds, 3),
                   "busbw_mbit": round(result.busbw * 8 / 1e6, 3),
                   "cpu_busy": round(busy, 3)}
        series = [[i, round(x * 8 / 1e6 / result.seconds, 3)] for i, x in enumerate(core_load)]
        return figures, series

    def judge(self, figures: dict) -> Judgement:
        pol, seed = figures["polarized"], figures["seeded"]
        slower = pol["completion_s"] / seed["completion_s"] if seed["completion_s"] else 0.0
        ok = (pol["repeat_fraction"] == 1.0 and seed["repeat_fraction"] < 0.8
              and pol["idle_core_uplinks"] >= 1 and seed["idle_core_uplinks"] == 0 and slower > 1.05)
        return Judgement(
            verdict(ok, valid(pol["cpu_busy"], seed["cpu_busy"])),
            expectation=("polarized: every pair colliding at tier 1 collides at tier 2 (100%), so half "
                         "the core uplinks stay idle and the transfer is slower; seeded: about half the "
                         "pairs collide again, all core uplinks carry traffic"),
            measured=(f"flows sharing an edge uplink that share an aggregation uplink again: polarized "
                      f"{pol['of_which_share_tier2']}/{pol['pairs_sharing_tier1']} pairs "
                      f"({pol['repeat_fraction']:.0%}), seeded {seed['of_which_share_tier2']}/"
                      f"{seed['pairs_sharing_tier1']} ({seed['repeat_fraction']:.0%}); pod-0 core uplink "
                      f"shares polarized {pol['core_uplink_share']} ({pol['idle_core_uplinks']} idle), "
                      f"seeded {seed['core_uplink_share']}; completion {pol['completion_s']} s vs "
                      f"{seed['completion_s']} s ({slower:.2f}x)"),
            derived={"slowdown_polarized_over_seeded": round(slower, 3)},
            headline=f"collisions repeat {pol['repeat_fraction']:.0%} vs {seed['repeat_fraction']:.0%}, "
                     f"{slower:.2f}x slower")

    def plot(self, result, path: Path) -> bool:
        """Pod 0's core uplinks' load (bars per uplink) and the completion time, per hashing mode."""
        figs = result.figures
        fig, (load, done) = plots.figure(self, result, ncols=2, size=(10, 4.5))
        uplink_names = list(figs["polarized"]["core_uplink_bytes"])
        plots.bars(load, uplink_names, {
            mode: [[b * 8 / 1e6 / figs[mode]["completion_s"]]
                   for b in figs[mode]["core_uplink_bytes"].values()] for mode in MODES}, "Mbit/s")
        load.set_title("pod-0 aggregation-to-core uplinks: mean load", fontsize=9)
        load.set_xlabel("uplink (aggregation switch port)")
        plots.bars(done, ["completion"], {
            f"{mode} ({figs[mode]['repeat_fraction']:.0%} of collisions repeat)": [[figs[mode]["completion_s"]]]
            for mode in MODES}, "s")
        done.set_title("the same send/recv, pod 0 to pod 1", fontsize=9)
        plots.save(fig, path)
        return True
