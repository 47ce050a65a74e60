"""C1 hash polarization: identical hashing at successive tiers repeats a collision.

A three-tier Clos (clos3), once with one hash basis on every switch (`polarized`, a fabric of one
ASIC) and once with a basis per switch (`seeded`). The same cross-pod send/recv (every pod-0 host
to its pod-1 partner over several connections with pinned 5-tuples) runs on both, `rounds` times:
- traces read from the switches: of the pairs of flows that share an edge uplink (tier 1), how
  many share an aggregation uplink (tier 2) again;
- port counters on pod 0's aggregation-to-core uplinks: polarized hashing can only use the
  uplink with the index the edge chose, so the core uplinks no traced path leaves by stay idle;
- the collective's completion time (the fastest round of each).

Expectation, from the fluid model (testbed/model/fluid.py) of the paths the traces found: every
flow's ports at their emulated rates, max-min fair rates recomputed as flows finish; the
polarized makespan over the seeded one is the predicted slowdown, for whatever shape the Clos
has (default: 1.50x; aggs=cores=3: 1.17x, the hosts' NICs, not the core, bound more of it).

The tolerance (TOLERANCE: measured / predicted within 1/1.15-1.15) is the emulator's error on
that ratio. Every measured time runs above the fluid one: 4.6% of each frame is headers, then
connection set-up, and TCP through a 48 KB drop-tail queue that several flows share loses
packets; a loss near the end of a flow with a window of a few segments waits for a
retransmission timeout (>= 0.2 s) while its link idles. That tail can make a single round
measure far above the prediction: it strikes polarized rounds more (8-9 flows per busy core
uplink, in the fabric, against 4 per NIC seeded, where the host's own queue holds them back
without loss), and a third to a half of rounds carry one. The fastest round leaves it out, once
a second round confirms it (within AGREE): a clean round repeats itself to a few percent, a
tail adds a random 0.2 s or more. Three rounds all tailed once made the fastest one a tail
(docs/claims.md, C1), so up to `more_rounds` more run until a second round confirms it.
Over repeated runs of both shapes the fastest round's excess over the fluid time varied by about
+-10% of the ratio (the spread measured over repeated runs: docs/claims.md, C1). 15% keeps a
margin above that and stays below the smallest prediction it must tell from "no slower" (1.17x).
The reverse path is no error source: its hash spreads only ACKs, and no data shares their links.
Crowded ports: a 48 KB queue holds 31 frames at 1500 bytes (crowd_limit: fewer at a larger
MTU, the queue is in bytes); with more than a third as many flows (10) on one port each
has under 3 segments queued, too few for the 3 duplicate ACKs of a fast retransmit, so losses
become timeouts and the port idles: the fluid model is then only a floor (edges=3 puts 12 flows
on a polarized core uplink; what it measured: docs/claims.md, C1), and the judge asks for at
least the band's lower edge.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import ClassVar

from testbed.emulation.build import Options
from testbed.emulation.factory import make_emulation
from testbed.emulation.trace import emulation_trace
from testbed.measure.meters import cpu_busy_fraction, imbalance
from testbed.model.fluid import makespan
from testbed.model.paths import port_rates, sending_ports, switch_ends
from testbed.scenario import plots
from testbed.scenario.base import Judgement, Scenario, verdict
from testbed.scenario.knobs import Knobs
from testbed.scenario.traffic_helpers import pin_ports, setup_of, uplinks
from testbed.workload import collectives as C

MODES = ("polarized", "seeded")
TOLERANCE = 0.15      # measured / predicted slowdown within 1/1.15-1.15 (see the docstring)
AGREE = 0.05          # a second round within 5% of the fastest confirms it (see the docstring)
ETHERNET = 14                     # bytes of header a frame carries beyond its MTU


def crowd_limit(setup: dict) -> int:
    """More flows than this on one port and TCP times out (docstring): a third of the full
    frames the port's bfifo holds at the fabric's MTU (48 KB: 31 at 1500, 11 at 4096, 5 at 9000)."""
    frames = setup.get("queue_bytes", 48_000) // (setup.get("mtu", 1500) + ETHERNET)
    return frames // 3


@dataclass(frozen=True)
class PolarizationKnobs(Knobs):
    bytes_per_flow: int = 400_000
    connections: int = 4          # per host pair
    rounds: int = 3               # the send/recv on each fabric; the fastest is judged
    more_rounds: int = 3          # at most this many more until a second round confirms the fastest
    QUICK: ClassVar[dict] = {"bytes_per_flow": 150_000}
    BOUNDS: ClassVar[dict] = {"bytes_per_flow": (10_000, 100_000_000, "bytes"),
                              "connections": (1, 16, "per host pair"), "rounds": (1, 20, "per fabric"),
                              "more_rounds": (0, 20, "per fabric")}
    HELP: ClassVar[dict] = {"bytes_per_flow": "bytes each connection sends",
                            "connections": "connections per host pair",
                            "rounds": "send/recv rounds per fabric (the fastest is judged)",
                            "more_rounds": "rounds beyond `rounds` while none is within 5% of the "
                                           "fastest (a retransmission timeout's tail)"}


def confirmed(seconds: list[float]) -> bool:
    """Whether the fastest of these round times has a second within AGREE of it."""
    fastest = sorted(seconds)[:2]
    return len(fastest) == 2 and fastest[1] <= fastest[0] * (1 + AGREE)


def until_confirmed(run_round, seconds, least: int, most: int) -> list:
    """`run_round()` `least` times, then again (`most` times in all at most) until the fastest
    is `confirmed`; `seconds(r)` is a round's time. Returns the rounds."""
    rounds: list = []
    while len(rounds) < least or (len(rounds) < most and not confirmed([seconds(r) for r in rounds])):
        rounds.append(run_round())
    return rounds


def traced_paths(emu, coll) -> list[list[str]]:
    """The interfaces every transfer leaves by (paths.sending_ports), traced from the switches."""
    ends = switch_ends(emu.fabric)
    return [sending_ports(emu.fabric, emulation_trace(emu, t.src, t.dst, sport=t.sport, dport=t.dport), ends)
            for t in coll.transfers]


def tier_uplinks(paths: list[list[str]]) -> list[tuple[str, str]]:
    """The tier-1 (edge) and tier-2 (aggregation) uplinks of every path: its 2nd and 3rd ports."""
    return [(p[1], p[2]) for p in paths]


def collisions(paths) -> tuple[int, int]:
    """Pairs of flows sharing a tier-1 uplink, and how many of those share a tier-2 uplink again."""
    shared1 = [(a, b) for a, b in combinations(range(len(paths)), 2) if paths[a][0] == paths[b][0]]
    return len(shared1), sum(1 for a, b in shared1 if paths[a][1] == paths[b][1])


def shares(loads: list) -> list[float]:
    total = sum(loads)
    return [round(x / total, 3) if total else 0 for x in loads]


# ---- the expectation (pure): the fluid model of the traced paths ----

def predicted_completion(mode: dict) -> float:
    """Seconds the send/recv takes in the fluid model: every traced path's ports at their
    emulated rates, each flow's bytes, max-min fair rates recomputed as flows finish."""
    sizes = [b * 8 / 1e6 for b in mode["flow_bytes"]]     # Mbit, against Mbit/s
    return makespan(mode["port_mbit"], mode["flow_paths"], sizes)


def traced_idle(mode: dict) -> int:
    """Pod 0's core uplinks that no traced path leaves by."""
    used = {p for path in mode["flow_paths"] for p in path}
    return sum(1 for port in mode["core_uplink_bytes"] if port not in used)


def crowd(mode: dict) -> int:
    """The most flows the traces put on one switch port (the host's own port excluded)."""
    counts: dict[str, int] = {}
    for path in mode["flow_paths"]:
        for port in path[1:]:
            counts[port] = counts.get(port, 0) + 1
    return max(counts.values(), default=0)


def rounds_run(mode: dict) -> str:
    """How many rounds a fabric ran, and whether a second confirmed the fastest: "3", "5 (unconfirmed)"."""
    seconds = mode.get("round_seconds", [])
    return f"{len(seconds)}" + ("" if confirmed(seconds) else " (unconfirmed)")


def band(predicted: float, crowded: bool = False) -> tuple[float, float]:
    """The measured slowdowns accepted: within TOLERANCE, or, when the polarized traces crowd more
    than crowd_limit() flows onto a port, anything from the prediction's lower edge up."""
    return predicted / (1 + TOLERANCE), (float("inf") if crowded else predicted * (1 + TOLERANCE))


def as_predicted(measured: float, predicted: float, crowded: bool = False) -> bool:
    low, high = band(predicted, crowded)
    return predicted > 0 and low <= measured <= high


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
            with make_emulation(self.fabric(), Options(routing={"ecmp": mode}), servers=self.servers) as emu:
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
        paths = traced_paths(emu, coll)
        pairs, again = collisions(tier_uplinks(paths))
        core, edge = uplinks(fab, "p0a", "core"), uplinks(fab, "p0e", "agg")
        k = self.knobs
        with emu.sampler([l.a_intf for l in core + edge], interval=0.1) as sampler:
            rounds = until_confirmed(lambda: cpu_busy_fraction(lambda: C.run(emu, coll)),
                                     lambda r: r[0][0].seconds, k.rounds, k.rounds + k.more_rounds)
        (result,), busy = min(rounds, key=lambda r: r[0][0].seconds)
        running = sum(r.seconds for (r,), _ in rounds)
        core_load = [sampler.sent(l.a_intf) for l in core]
        total = sum(core_load)
        rates = port_rates(fab)
        figures = {"flows": len(paths),
                   "flow_paths": paths, "flow_bytes": [t.nbytes for t in coll.transfers],
                   "port_mbit": {p: rates[p] for p in sorted({p for path in paths for p in path})},
                   "flow_seconds": [round(f.seconds, 3) for f in result.flows], "pairs_sharing_tier1": pairs,
                   "of_which_share_tier2": again,
                   "repeat_fraction": round(again / pairs, 3) if pairs else 0.0,
                   "core_uplink_bytes": dict(zip((l.a_intf for l in core), core_load)),
                   "core_uplink_share": shares(core_load),
                   "idle_core_uplinks": sum(1 for x in core_load if total and x < 0.05 * total / len(core)),
                   "core_imbalance": imbalance([float(x) for x in core_load]),
                   "edge_uplink_share": shares([sampler.sent(l.a_intf) for l in edge]),
                   "completion_s": round(result.seconds, 3),
                   "round_seconds": [round(r.seconds, 3) for (r,), _ in rounds],
                   "round_cpu_busy": [round(b, 3) for _, b in rounds],
                   "busbw_mbit": round(result.busbw * 8 / 1e6, 3),
                   "cpu_busy": round(busy, 3)}
        series = [[i, round(x * 8 / 1e6 / running, 3)] for i, x in enumerate(core_load)]
        return figures, series

    def judge(self, figures: dict) -> Judgement:
        pol, seed = figures["polarized"], figures["seeded"]
        slower = pol["completion_s"] / seed["completion_s"] if seed["completion_s"] else 0.0
        pred_pol, pred_seed = predicted_completion(pol), predicted_completion(seed)
        predicted = pred_pol / pred_seed if pred_seed else 0.0
        idle_traced = {mode: traced_idle(figures[mode]) for mode in MODES}
        crowded = crowd(pol) > crowd_limit(figures.get("setup", {}).get("fabrics", {}).get("polarized", {}))
        ok = (pol["repeat_fraction"] == 1.0 and seed["repeat_fraction"] < 0.8
              and pol["idle_core_uplinks"] == idle_traced["polarized"] >= 1
              and seed["idle_core_uplinks"] == idle_traced["seeded"]
              and as_predicted(slower, predicted, crowded))
        low, high = band(predicted, crowded)
        accepted = (f"at least {low:.2f}x: {crowd(pol)} flows share a port, too many for the fluid model's "
                    f"upper edge" if crowded else f"accepted {low:.2f}-{high:.2f}x")
        return Judgement(
            verdict(ok),
            expectation=(f"polarized: every pair colliding at tier 1 collides at tier 2 (100%), so the core "
                         f"uplinks its traces never leave by ({idle_traced['polarized']}) stay idle; seeded: "
                         f"about 1/aggs of the pairs collide again, idle only the core uplinks its traces "
                         f"miss ({idle_traced['seeded']}); the fluid model of the traced paths: "
                         f"{pred_pol:.2f} s "
                         f"against {pred_seed:.2f} s, {predicted:.2f}x slower ({accepted}; the "
                         f"emulator's error on the fastest round, which a second within "
                         f"{AGREE:.0%} confirms)"),
            measured=(f"flows sharing an edge uplink that share an aggregation uplink again: polarized "
                      f"{pol['of_which_share_tier2']}/{pol['pairs_sharing_tier1']} pairs "
                      f"({pol['repeat_fraction']:.0%}), seeded {seed['of_which_share_tier2']}/"
                      f"{seed['pairs_sharing_tier1']} ({seed['repeat_fraction']:.0%}); pod-0 core uplink "
                      f"shares polarized {pol['core_uplink_share']} ({pol['idle_core_uplinks']} idle), "
                      f"seeded {seed['core_uplink_share']} ({seed['idle_core_uplinks']} idle); completion "
                      f"{pol['completion_s']} s vs {seed['completion_s']} s ({slower:.2f}x, predicted "
                      f"{predicted:.2f}x; fastest of {rounds_run(pol)} and {rounds_run(seed)} rounds)"),
            derived={"slowdown_polarized_over_seeded": round(slower, 3),
                     "predicted_slowdown": round(predicted, 3),
                     "predicted_completion_s": {"polarized": round(pred_pol, 3),
                                                "seeded": round(pred_seed, 3)}},
            headline=f"collisions repeat {pol['repeat_fraction']:.0%} vs {seed['repeat_fraction']:.0%}, "
                     f"{slower:.2f}x slower (predicted {predicted:.2f}x)",
            busy=(pol["cpu_busy"], seed["cpu_busy"]))

    def plot(self, result, path: Path) -> bool:
        """Pod 0's core uplinks' utilization (bars per uplink: % of the uplink's rate, as the case
        study states it, with the capacity and the paper's 95% and 22%) and the completion time,
        per hashing mode."""
        figs = result.figures
        fig, (load, done) = plots.figure(self, result, ncols=2, size=(10, 4.5))
        uplink_names = list(figs["polarized"]["core_uplink_bytes"])
        plots.bars(load, uplink_names, {mode: [[u] for u in utilization(figs[mode], rate_of(figs)).values()]
                                        for mode in MODES}, "utilization (% of the uplink's rate)")
        load.axhline(100, color="dimgrey", lw=1.5,
                     label=f"capacity ({rate_of(figs)(uplink_names[0]):g} Mbit/s)")
        plots.paper_value(load, 95, "one spine link at 95%", style=0)
        plots.paper_value(load, 22, "... another at 22%", style=1)
        load.set_ylim(0, 125)
        load.legend(fontsize="x-small", ncol=2, loc="upper center")
        load.set_title("pod-0 aggregation-to-core uplinks: mean load over the rounds", fontsize=9)
        load.set_xlabel("uplink (aggregation switch port)")
        plots.bars(done, ["completion"], {
            f"{mode} ({figs[mode]['repeat_fraction']:.0%} of collisions repeat)":
                [[figs[mode]["completion_s"]]]
            for mode in MODES}, "completion (s)")
        done.set_ylim(0, 1.4 * max(figs[mode]["completion_s"] for mode in MODES))    # the legend above
        done.set_title("the same send/recv, pod 0 to pod 1", fontsize=9)
        plots.save(fig, path)
        return True


def rate_of(figs: dict):
    """An uplink's rate (Mbit/s): from the traced paths of either mode (an idle one is on none of
    one mode's paths), else the fastest uplink traced."""
    rates = {**figs["seeded"]["port_mbit"], **figs["polarized"]["port_mbit"]}
    uplinks = [p for p in rates if p in figs["polarized"]["core_uplink_bytes"]]
    return lambda port: rates.get(port, max((rates[p] for p in uplinks), default=1.0))


def utilization(mode: dict, rate) -> dict[str, float]:
    """Each core uplink's mean utilization (%) over the time the rounds ran (the sampler saw them all)."""
    seconds = sum(mode.get("round_seconds") or [mode["completion_s"]]) or 1.0
    return {p: round(100 * b * 8 / 1e6 / seconds / rate(p), 1) for p, b in mode["core_uplink_bytes"].items()}
