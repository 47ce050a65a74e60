"""C7 segment placement: a job inside one segment puts no byte on tier 2 and keeps its speed however
busy the upper tiers are; the same job spread over segments shares them and slows down.

One HPN pod of `width` segments. A ring AllReduce over `job_hosts` hosts (one ring per rail) is
placed (a) inside segment 0 and (b) spread over the segments in blocks (NCCL orders a ring by
topology, so it crosses tier 2 `width` times per rail). Other hosts of every segment (`bg_hosts`:
the rest of the cluster) keep iperf3 traffic to the same host of the next segment at a share of
the ToR uplinks (`loads`), on every rail and plane; both placements run under the same
background, alternately, `repetitions` times. Measured: completion (the runner's: until the last
byte was read; medians compared), CPU busy, and, without background, the payload that crossed
tier 2: what the ToR uplink ports sent (sysfs counters) less one header per packet.

Scaled down: the upper tier a spread job shares is one uplink per ToR and plane (aggs_per_plane=1,
at the paper's 400G against 200G host ports; 400G -> 12 Mbit/s), so the background shares the
job's crossing hop by construction, not by a hash. A crossing hop is one TCP connection on one NIC
port, paced at 90% of it (D; a lossless fabric's flow control: unpaced, slow start's losses made
runs vary by 50%); on its uplink (U = 2 ports) k = bg_hosts x streams background streams, each
paced by the kernel at load x U / k. Expected: the job's max-min share r of the uplink
(water-filling) and a spread ring slowed by D / r (a phase ends with its slowest hop): loads 0.5,
0.75, 1.0 give 1.0x, 1.8x, 2.25x. Up to about half the uplink nothing changes (it has room for
the job's port besides the background), above it the job gets what is left, at least its fair
share among k + 1 flows. HPN's +59.3% on 448 GPUs is a crossing hop at 63% of its line: here
between loads 0.5 and 0.75. Bytes: inside 0; spread `width` crossing hops of 2 (n - 1)/n x size
per rail (the paper: 19 -> 3 segments, -37% cross-segment traffic; here 1 segment for `width`: -100%).

The background's TCP backs off below its pacing rate under losses, so the job gets more than its
max-min share: in repeated runs at least about half of the expected excess over 1x (the figures:
docs/claims.md, C7). The bar asks each loaded level for a quarter of it (75%: 1.2x; 100%: 1.31x),
growth with the load and inside never slower, each within 10% noise. Tier 2 inside is not quite
0 on the wire: the ToR ports' own IPv6 chatter (below). An inside job's SYN is lost now and then
(+1 s, the initial retransmission timeout): medians of three absorb it.
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from scenarios.claims.segment_placement.segment_traffic import BG_PORT, Background, Tier2
from testbed.core.errors import ParamError
from testbed.emulation.build import Options
from testbed.emulation.factory import make_emulation
from testbed.measure.meters import cpu_busy_fraction
from testbed.model.fluid import max_min
from testbed.scenario import plots
from testbed.scenario.base import Judgement, Scenario, verdict
from testbed.scenario.knobs import Knobs
from testbed.scenario.traffic_helpers import median, setup_of
from testbed.workload import collectives as C

PLACEMENTS = ("inside", "spread")
PAPER_GAIN = 0.593      # HPN sec. 7: AllReduce on 448 GPUs up to +59.3% inside one segment
# tier-2 wire bytes "inside" may show, never a transfer: the ToR ports' own IPv6 chatter (router
# solicitations and MLD reports of 70-90 B the kernel sends from every port in its first seconds;
# the first run after bring-up sees about a kilobyte of them: docs/claims.md, C7)
STRAY_BYTES = 2_000
BYTES_TOLERANCE = 0.05    # spread's tier-2 payload against the ring's crossing bytes
NOISE = 0.10              # completion differences smaller than this are noise (see the bars above)
SHARE_OF_EXCESS = 0.25    # of the expected slowdown's excess over 1, the least a loaded level must show
PACE = 0.9                # the job's connections are paced at 90% of a NIC port (a lossless fabric's
                          # flow control; unpaced, slow start's losses varied runs widely)


@dataclass(frozen=True)
class PlacementKnobs(Knobs):
    size: int = 750_000
    job_hosts: int = 4
    width: int = 2
    loads: tuple[float, ...] = (0.5, 0.75, 1.0)
    bg_hosts: int = 2
    streams: int = 2
    repetitions: int = 3
    QUICK: ClassVar[dict] = {"loads": (0.75, 1.0), "repetitions": 3, "size": 500_000}
    BOUNDS: ClassVar[dict] = {
        "size": (50_000, 100_000_000, "bytes per rank"), "job_hosts": (2, 64, "hosts in the job"),
        "width": (2, 16, "segments of the spread placement"),
        "loads": (0.05, 1.0, "of a ToR uplink's rate: above 1 the background alone fills it"),
        "bg_hosts": (1, 32, "per segment"), "streams": (1, 8, "per NIC port"),
        "repetitions": (1, 20, "runs of each placement per load")}
    HELP: ClassVar[dict] = {
        "size": "AllReduce size, bytes per rank (GPU)", "job_hosts": "hosts in the job (ranks per rail)",
        "width": "segments the spread placement uses (blocks of hosts)",
        "loads": "background load levels on the upper tier besides none, as a share of a ToR uplink",
        "bg_hosts": "background hosts per segment", "streams": "background TCP streams per NIC port",
        "repetitions": "runs of each placement at each load"}

    def rules(self) -> None:
        if self.job_hosts < self.width:
            raise ParamError(f"job_hosts={self.job_hosts}: the spread placement needs one host in "
                             f"each of its width={self.width} segments")

    def levels(self) -> list[float]:
        return [0.0, *sorted(set(self.loads))]


# ---- the expectation (pure) ----

def water_fill(capacity: float, demands: list[float]) -> list[float]:
    """Max-min fair shares of one link: every flow gets its demand or an equal share of what the
    smaller ones left, whichever is less (the fluid model on one link)."""
    return max_min({"uplink": capacity}, [["uplink"]] * len(demands), demands)


def expected_slowdown(load: float, port_mbit: float, uplink_mbit: float, streams: int) -> float:
    """How much slower the spread ring is at `load`: its crossing hop's demand over its fair share
    of an uplink that `streams` paced background streams offer load x uplink to."""
    demand = PACE * port_mbit
    bg = [load * uplink_mbit / streams] * streams if load else []
    return demand / water_fill(uplink_mbit, [demand, *bg])[0]


def blocks(total: int, parts: int) -> list[int]:
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def segment_of(host: str) -> str:
    return host.split("h")[0]       # p0s1h3 -> p0s1


def crossing_bytes(coll) -> int:
    """The collective's bytes between hosts of different segments: what must cross tier 2."""
    return sum(t.nbytes for t in coll.transfers if segment_of(t.src.host) != segment_of(t.dst.host))


# ---- the scenario ----

class SegmentPlacement(Scenario, name="segment-placement", claim="C7", tour=True):
    title = "one ring AllReduce inside a segment vs spread over segments"
    paper = ("HPN secs. 4 and 7: a 1,024-GPU segment has no contention between tiers; a 2,300-GPU job "
             "went from 19 segments to 3 (cross-segment traffic -37%); AllReduce on 448 GPUs up to +59.3%")

    families = ("hpn",)
    # 400G -> 12 Mbit/s: at load 1 the fabric forwards about 70 Mbit/s over three switches
    base: ClassVar[dict] = {"pods": 1, "aggs_per_plane": 1, "nics": 1, "rails": 1, "scale": 0.03}
    fixed: ClassVar[dict] = {
        "pods": "the spread placement crosses segments of one pod (tier 2), not the core",
        "segments": "set width=W: the pod has the spread placement's segments",
        "hosts": "set job_hosts and bg_hosts: a segment holds the job and the background hosts",
        "aggs_per_plane": "one uplink per ToR and plane: the background shares the job's crossing "
                          "hop by construction, not by a hash",
        "single_tor": "HPN's dual-ToR, dual-plane segment: one uplink per ToR",
        "dual_plane": "HPN's dual-ToR, dual-plane segment: one uplink per ToR"}
    Knobs = PlacementKnobs

    def fabric_settings(self, family: str) -> dict:
        return {"segments": self.knobs.width, "hosts": self.knobs.job_hosts + self.knobs.bg_hosts}

    def rates(self, fab) -> dict:
        """A NIC port's and a ToR uplink's emulated rate (Mbit/s)."""
        up = [l for l in fab.switch_links() if fab.switches[l.a].role == "tor"]
        return {"port_mbit": fab.link_mbit(fab.host_links()[0]), "uplink_mbit": fab.link_mbit(up[0])}

    def meaningful(self) -> None:
        fab, k = self.fabric(), self.knobs
        p, rates = fab.params, self.rates(fab)
        if p.rails != p.nics:
            self.refuse(f"nics={p.nics}, rails={p.rails}: rail-optimized, one NIC per rail, so that "
                        "each rail's ring has its ToRs to itself")
        most = max(k.loads) * rates["uplink_mbit"]
        if k.bg_hosts * rates["port_mbit"] < most:
            self.refuse(f"bg_hosts={k.bg_hosts}: {k.bg_hosts} ports of {rates['port_mbit']:g} Mbit/s "
                        f"cannot offer load {max(k.loads):g} of a {rates['uplink_mbit']:g} Mbit/s uplink; "
                        f"needs bg_hosts >= {math.ceil(most / rates['port_mbit'])}")

    def hosts(self) -> dict:
        """The job's hosts in each placement (ring order) and the background's (src, dst) pairs."""
        k = self.knobs
        spread = [f"p0s{s}h{i}" for s, n in enumerate(blocks(k.job_hosts, k.width)) for i in range(n)]
        inside = [f"p0s0h{i}" for i in range(k.job_hosts)]
        bg = [(f"p0s{s}h{k.job_hosts + i}", f"p0s{(s + 1) % k.width}h{k.job_hosts + i}")
              for s in range(k.width) for i in range(k.bg_hosts)]
        return {"inside": inside, "spread": spread, "background": bg}

    def bg_seconds(self, rates: dict) -> float:
        """How long a load level's background runs: its placements at the worst expected slowdown,
        twice over, plus start-up (the clients are stopped once the level is done)."""
        k = self.knobs
        sent = 2 * (k.job_hosts - 1) / k.job_hosts * k.size * 8 / 1e6     # Mbit per rank
        worst = expected_slowdown(max(k.loads), rates["port_mbit"], rates["uplink_mbit"],
                                  k.streams * k.bg_hosts)
        return round(2 * k.repetitions * (sent / rates["port_mbit"] * (1 + worst) + 3) + 20)

    def run(self, quick: bool) -> dict:
        k, fab = self.knobs, self.fabric()
        hosts, rates = self.hosts(), self.rates(fab)
        jobs = {name: C.ring_allreduce(fab, hosts[name], k.size, job=f"allreduce-{name}")
                for name in PLACEMENTS}
        bg_hosts = sorted({h for pair in hosts["background"] for h in pair})
        # at 100% load the background fills four ToR uplinks' queues at once, more than the
        # userspace datapath's one send buffer holds: raised, so each port keeps its own queue
        # and the inside job is not hit by the drops (testbed/emulation/net/sendbuf.py)
        with make_emulation(fab, Options(send_buffer=True), servers=self.servers) as emu:
            tier2 = Tier2(emu, bg_hosts)
            levels = [self.level(emu, tier2, jobs, hosts["background"], load, self.bg_seconds(rates))
                      for load in k.levels()]
            setup = setup_of(emu, placements={n: hosts[n] for n in PLACEMENTS},
                             background=hosts["background"], bg_seconds=self.bg_seconds(rates))
        return {"levels": levels, "rates": rates, "ranks": jobs["spread"].ranks,
                "expected_tier2_bytes": {n: crossing_bytes(jobs[n]) for n in PLACEMENTS},
                "setup": setup, "series": {}}

    def level(self, emu, tier2: Tier2, jobs: dict, pairs: list, load: float, seconds: float) -> dict:
        """Every placement `repetitions` times (alternating which goes first) under one background."""
        k = self.knobs
        # the runner paces at a share of the whole NIC (both ports); a connection uses one port
        nic = jobs["inside"].transfers[0].src
        pace = PACE * emu.fabric.link_mbit(emu.fabric.host_link(nic.ports[0])) / emu.fabric.line_mbit(nic)
        row = {"load": load, **{n: {"completion_s": [], "tier2_bytes": [], "tier2_wire_bytes": [],
                                    "bg_mbit": [], "cpu_busy": []} for n in PLACEMENTS}}
        # server ports new at every level: a 5-tuple of the last level may linger in TIME_WAIT
        port_base = BG_PORT + k.levels().index(load) * len(pairs) * emu.fabric.params.nics
        with Background(emu, pairs, load, k.streams, k.streams * k.bg_hosts, seconds, port_base) as bg:
            row["bg_ready_mbit"] = round(bg.wait_ready(tier2), 2)
            for rep in range(k.repetitions):
                for name in (PLACEMENTS if rep % 2 == 0 else PLACEMENTS[::-1]):
                    before, t0 = tier2.read(), time.monotonic()
                    (r,), busy = cpu_busy_fraction(lambda name=name: C.run(emu, jobs[name], pace=pace))
                    d, got = Tier2.delta(before, tier2.read()), row[name]
                    got["completion_s"].append(round(r.seconds, 3))
                    # the job's share only without background: under load the uplinks drop some of
                    # the background's packets, which its hosts' ports counted as sent
                    got["tier2_bytes"].append(d["up"] if not load else None)
                    got["tier2_wire_bytes"].append(d["wire"])
                    got["bg_mbit"].append(round(d["bg"] * 8 / 1e6 / (time.monotonic() - t0), 2))
                    got["cpu_busy"].append(round(busy, 3))
        row["bg_ran_throughout"] = bg.ran_throughout
        return row

    # ---- the verdict ----
    def slowdowns(self, figures: dict) -> list[dict]:
        """Per load level: the placements' median completion, the spread's slowdown, the expected one."""
        k, rates, out = self.knobs_of(figures), figures["rates"], []
        for row in figures["levels"]:
            inside, spread = (round(median(row[n]["completion_s"]), 3) for n in PLACEMENTS)
            expected = expected_slowdown(row["load"], rates["port_mbit"], rates["uplink_mbit"],
                                         k.streams * k.bg_hosts)
            out.append({"load": row["load"], "inside_s": inside, "spread_s": spread,
                        "slowdown": round(spread / inside, 3) if inside else 0.0,
                        "expected": round(expected, 3)})
        return out

    def judge(self, figures: dict) -> Judgement:
        levels, rows = figures["levels"], self.slowdowns(figures)
        quiet, top, expected = levels[0], rows[-1], figures["expected_tier2_bytes"]["spread"]
        inside_wire = max(quiet["inside"]["tier2_wire_bytes"])
        inside_payload, spread_bytes = (median(quiet[n]["tier2_bytes"]) for n in PLACEMENTS)
        bytes_ok = inside_wire <= STRAY_BYTES and abs(spread_bytes / expected - 1) <= BYTES_TOLERANCE
        never_slower = all(r["inside_s"] <= r["spread_s"] * (1 + NOISE) for r in rows)
        inside_steady = max(r["inside_s"] for r in rows) <= rows[0]["inside_s"] * (1 + NOISE)
        grows = all(b["slowdown"] >= a["slowdown"] - NOISE for a, b in itertools.pairwise(rows))
        follows = all(r["slowdown"] >= 1 + SHARE_OF_EXCESS * (r["expected"] - 1) for r in rows
                      if r["expected"] > 1)
        ok = bytes_ok and never_slower and inside_steady and grows and follows
        busy = [x for row in levels for n in PLACEMENTS for x in row[n]["cpu_busy"]]
        ran = all(row["bg_ran_throughout"] for row in levels)
        pct = ", ".join(f"{r['load']:.0%}: {r['slowdown']:.2f}x (exp. {r['expected']:.2f}x)" for r in rows)
        return Judgement(
            verdict(ok, ran),
            expectation=(f"inside one segment no byte crosses tier 2 and completion stays put whatever "
                         f"the load on the upper tier; spread over {self.knobs_of(figures).width} segments"
                         f", {expected / 1e6:.2f} MB cross it and the ring slows by its crossing "
                         f"hop's demand over its max-min share of the uplink: "
                         + ", ".join(f"{r['load']:.0%} load {r['expected']:.2f}x" for r in rows)
                         + f" (bars: at least {SHARE_OF_EXCESS:.0%} of the expected excess over 1x; "
                         f"growing with the load, inside never slower, each within {NOISE:.0%} noise)"),
            measured=(f"tier-2 payload without background: inside {inside_payload:.0f} B "
                      f"({inside_wire} B on the wire), spread {spread_bytes / 1e6:.3f} MB "
                      f"(expected {expected / 1e6:.3f} MB); median completion inside / spread by "
                      "background load: " + ", ".join(f"{r['load']:.0%} {r['inside_s']} / {r['spread_s']} s"
                                                     for r in rows)
                      + f"; spread slowdown {pct}"),
            derived={"slowdowns": rows},
            headline=f"tier 2: inside {inside_payload:.0f} B, spread {spread_bytes / 1e6:.2f} MB; spread "
                     f"{top['slowdown']:.2f}x slower at {top['load']:.0%} load (exp. {top['expected']:.2f}x)",
            busy=busy)

    def plot(self, result, path: Path) -> bool:
        """Completion by background load (bars: mean of the runs; range and dots: every run;
        x: the spread's expected completion), and the payload that crossed tier 2."""
        figs, k = result.figures, self.knobs_of({"setup": result.setup})
        fig, (done, tier2) = plots.figure(self, result, ncols=2, size=(11, 4.8))
        levels, rows = figs["levels"], figs["slowdowns"]
        loads = ["none" if not r["load"] else f"{r['load']:.0%}" for r in levels]
        # a placement's name, and its colour, the same in both panels
        names = {"inside": f"inside one segment ({k.job_hosts} hosts)",
                 "spread": f"spread over {k.width} segments"}
        plots.bars(done, loads, {names[n]: [r[n]["completion_s"] for r in levels] for n in PLACEMENTS},
            "AllReduce completion (s)")
        done.scatter([c + 0.2 for c in range(len(rows))], [r["inside_s"] * r["expected"] for r in rows],
                     marker="x", s=40, color="black", zorder=4, label="spread, expected (max-min share)")
        inside = levels[-1]["inside"]["completion_s"]     # the paper's gain, at the heaviest load
        plots.paper_value(done, sum(inside) / len(inside) * (1 + PAPER_GAIN),
                          f"inside one segment up to +{PAPER_GAIN:.1%}",
                          span=plots.bar_span(len(levels) - 1, 1, 2))
        done.legend(fontsize="small")
        done.set_xlabel("background load on the ToR uplinks (share of their rate)")
        done.set_title(f"ring AllReduce of {k.size / 1e6:g} MB per GPU (bars: mean; dots: runs)", fontsize=9)
        quiet, mb = levels[0], 1e6
        plots.bars(tier2, ["measured\n(ToR uplink counters)", "expected\n(the ring's crossing transfers)"], {
            names[n]: [[(x or 0) / mb for x in quiet[n]["tier2_bytes"]],
                       [figs["expected_tier2_bytes"][n] / mb]]
            for n in PLACEMENTS}, "payload across tier 2 (MB)")
        tier2.legend(fontsize="small", loc="upper left")
        tier2.set_title("payload the ToRs sent up to the aggregation tier, no background", fontsize=9)
        plots.save(fig, path)
        return True
