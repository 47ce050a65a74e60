"""C2 at segment scale: one ToR of a full HPN segment fails while all 1,088 NICs send.

The fabric is `--preset segment` (136 hosts, 8 of them backups, 8 NICs each, dual-ToR: 16 ToRs,
2,176 host links). Every NIC sends to the same NIC of the next host (so traffic stays under its
rail's ToR pair), one paced UDP flow per port at 150% of the port's rate (testbed/workload/
paced.py: one process for all 2,176 flows), so that every host port runs full. The ToR of rail 0,
plane 0 then fails: each of the 136 hosts loses one port of its NIC 0, whose flows move to the
NIC's other port. Expected: the segment delivers 1 - 136/2,176 = 15/16 of its baseline (HPN's
6.25%, one link of a host, here for every host at once), accepted within 2 points; no NIC stops
receiving (every NIC gets datagrams in every `window` s of the fault); back within 3% of the
baseline after the repair. Both against the NICs off the failed ToR (the control): what they kept
of their own baseline is the emulator's drift, and the segment's figures are divided by it. At
about one datagram per port per second, a window of 10 s holds ~11 datagrams a port, and the ports
move together (one sender: a stall of it empties every port's queue at once, and each port's HTB
bucket then lets one frame through early): the untouched ports' own figures wander by several
points over repeated runs while rail 0's share of the control's stays steady (the spread measured
over repeated runs: docs/claims.md, C2), hence the control and a 16 s baseline. With
`single_tor_baseline` (not in quick mode) single-ToR HPN runs too: rail 0's only ToR fails and NIC
0 of every host stops (<= 5% of its baseline).

Rates: the userspace datapath forwards only a few thousand packets per second when it polls 2,400
ports in one thread (nearly a core for a few thousand: docs/claims.md, C2), so the host ports run
at 0.0125 Mbit/s (scale 0.0000625: a 1,400-byte datagram per port about every 0.9 s, 2.4k pps in
all). The throughput figures sum 2,176 ports over seconds, yet that granularity does not average
out (the ports move together, see above), hence the control; on a kernel datapath the rates can be
raised with --set scale=....

Throughput is what the hosts sent into the ToRs (the rx counters of the switch ends: set by each
host port's shaping, exact whatever the datapath does). When 136 ports change state at once, the
userspace datapath forwards almost nothing for some seconds while it reconfigures: every NIC of
the segment stops receiving, also those the fault does not touch (several seconds at the fault and
at the repair: docs/claims.md, C2). A real ToR pair has no such pause, so the NICs off the failed
ToR are the control: what the ToRs delivered, and whether any NIC stopped receiving, is measured
from one second after the control is back at 80% of its baseline, the mean of three samples
(`datapath_pause_s`).
A NIC that lost a port receives about one datagram every 0.9 s; a 3 s window let the datapath's
jitter show as gaps on NICs the fault does not touch too (docs/claims.md, C2), so `window` is 5 s.
A pause that leaves less than twice `window` of the fault, or 3 s after the repair, a datapath
that delivered under 90% of what was sent before the fault, or a saturated CPU make the run
invalid.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from testbed.emulation.factory import make_emulation
from testbed.emulation.faults.inject import Faults
from testbed.measure.meters import Sampler, cpu_busy_fraction
from testbed.model.families.hpn import SEGMENT
from testbed.scenario import fault_harness as harness
from testbed.scenario import plots
from testbed.scenario.base import Judgement, verdict
from testbed.scenario.fault_harness import PAPER_LOSS, SECONDS
from testbed.scenario.knobs import Knobs
from testbed.scenario.timeline import Schedule, Timeline
from testbed.workload.paced import PacedLoad, one_flow_per_port

TOR = "p0s0r0t0"       # rail 0, plane 0 (dual-ToR); single-ToR: rail 0's only ToR
SCALE = 0.0000625
OFFERED = 1.5          # of each port's rate: the ports run full (at 1.05 the sender's own jitter
                       # set the rate, 7% below it during the fault, not the ports' shaping)
BAND, RECOVERED, STOPPED = 0.02, 0.97, 0.05
SATURATED = 0.9        # a baseline below this share of the capacity: the emulator dropped packets


@dataclass(frozen=True)
class SegmentKnobs(Knobs):
    warm: float = 3.0
    base: float = 16.0      # a frame per port at a window's edge: 0.9 s / base of the rate
    fault: float = 40.0     # long enough to outlast the datapath's pause at the fault (C2's docs)
    after: float = 20.0
    window: float = 5.0
    single_tor_baseline: bool = True
    QUICK: ClassVar[dict] = {"single_tor_baseline": False}
    BOUNDS: ClassVar[dict] = {"warm": SECONDS, "base": SECONDS, "fault": SECONDS, "after": SECONDS,
                              "window": (1.0, 30.0, "seconds")}
    HELP: ClassVar[dict] = {**harness.RunKnobs.HELP, "window": "s: a NIC that gets nothing for this long "
                            "during the fault has stopped", "single_tor_baseline": "also run single-ToR "
                            "HPN (off in quick mode)"}

    def timeline(self) -> Timeline:
        return Timeline(self.warm, self.base, self.fault, self.after)

    def rules(self) -> None:
        if self.window > self.fault / 2:
            from testbed.core.errors import ParamError
            raise ParamError(f"window={self.window}: at most half the fault ({self.fault:g} s)")


def invalid_reasons(runs: list[dict], window: float, stalled: list[str]) -> list[str]:
    """Why these runs measured the emulator rather than the fabric (empty: a valid measurement)."""
    return [why for bad, why in (
        (any(r["baseline_mbps"] < SATURATED * r["capacity_mbps"] for r in runs),
         "the hosts did not fill their ports before the fault"),
        (any(r["measured_s"][1] < 2 * window or r["measured_s"][2] < 3 for r in runs),
         "the NICs the fault does not touch were not back at 80% for long enough to measure "
         "(the userspace datapath, one thread, set the rate: not the fabric)"),
        (any(r["delivered_mbps"][0] < SATURATED * r["baseline_mbps"] for r in runs),
         "the ToRs delivered less than the hosts sent before the fault"),
        (bool(stalled), f"{len(stalled)} NICs the fault does not touch stopped receiving for "
         f"{window:g} s (the datapath stalled: a gap on the others cannot be told from it)")) if bad]


def received_per_nic(fab) -> dict[str, list[str]]:
    """The switch ends of each NIC's links: what they send is what the NIC received."""
    return {nic.name: [fab.host_link(p).b_intf for p in nic.ports] for nic in fab.nics()}


def stopped_nics(sampler: Sampler, per_nic: dict, start: float, end: float, window: float) -> list[str]:
    """NICs that received nothing in some `window` s inside [start, end] (steps of a sample)."""
    out = []
    for nic, intfs in per_nic.items():
        totals = _summed(sampler, intfs, start, end)
        if any(b1 - b0 <= 0 for (t0, b0) in totals for (t1, b1) in totals
               if window - 0.01 <= t1 - t0 < window + sampler.interval - 0.01):
            out.append(nic)
    return out


def _summed(sampler: Sampler, intfs: list[str], start: float, end: float) -> list[tuple[float, int]]:
    """The summed counters of `intfs` sample by sample inside [start, end] (by the first one's
    clock: each interface has the moment of its own read)."""
    series = [sampler.series[i] for i in intfs]
    n = min(len(s) for s in series)
    return [(series[0][k][0], sum(s[k][1] for s in series)) for k in range(n)
            if start <= series[0][k][0] <= end]


def resumed(sampler: Sampler, control: list[str], baseline: float, start: float, end: float,
            run: int = 3) -> float:
    """When the NICs the fault does not touch were back at 80% of their baseline after `start`
    (the datapath's pause over): the first `run` samples whose mean is (their ports deliver in
    step, so single samples swing by a third around the rate), or `end` if they never were."""
    points = [(t, v) for t, v in sampler.rate_series(control) if start + sampler.interval <= t <= end]
    for k in range(len(points) - run + 1):
        if sum(v for _, v in points[k:k + run]) / run >= 0.8 * baseline:
            return points[k][0] - sampler.interval
    return end


class SegmentTorFailure(harness.FaultScenario, name="segment-tor-failure", claim="C2"):
    title = "a ToR of a full HPN segment fails under traffic from all 1,088 NICs"
    paper = ("HPN secs. 2-3: dual-ToR turns a ToR failure into one lost port per NIC on that ToR "
             "(6.25% of a host with 8 NICs x 2 ports); single-ToR loses every host's NIC on it")
    Knobs = SegmentKnobs
    base: ClassVar[dict] = {**SEGMENT, "scale": SCALE}
    x_label = "time since the ToR failed (s)"
    y_label = "segment total (Mbit/s)"

    def single_baseline(self) -> bool:
        return self.knobs.single_tor_baseline

    def setup(self, timeline) -> dict:
        return {"warm_base_fault_after_s": timeline.steps(), "x_label": self.x_label,
                "y_label": self.y_label, "tor": TOR, "offered_share_of_port": OFFERED,
                "window_s": self.knobs.window,
                "fabric": "hpn --preset segment; single_tor for the baseline",
                "traffic": "every NIC to the same NIC of the next host, one paced UDP flow per port"}

    def variant(self, single_tor: bool, timeline) -> dict:
        fab = self.fabric(single_tor=single_tor)
        hosts = list(fab.hosts)
        pairs = [(nic, fab.hosts[hosts[(k + 1) % len(hosts)]].nics[nic.index])
                 for k, h in enumerate(hosts) for nic in fab.hosts[h].nics]
        per_nic = received_per_nic(fab)
        down = [i for intfs in per_nic.values() for i in intfs]
        on_tor = {l.b_intf for l in fab.host_links() if l.b == TOR}
        with make_emulation(fab, servers=self.servers) as emu, Faults(emu) as faults:
            port_rate = fab.link_mbit(fab.host_links()[0]) * 1e6 / 8
            flows = one_flow_per_port(emu, pairs, OFFERED * port_rate)
            # what the hosts sent into the ToRs (rx of the switch ends: HTB-exact, whatever the
            # datapath does) and what the ToRs delivered to the hosts (tx: pauses show there)
            with emu.sampler(down, interval=1.0, counter="rx_bytes", queues=False) as sent, \
                    emu.sampler(down, interval=1.0, counter="tx_bytes", queues=False) as sampler:
                load = PacedLoad(emu, flows, timeline.seconds)
                (counts, t), busy = cpu_busy_fraction(lambda: self.play(sampler, load, faults, timeline))
            t_start, t_fault, t_repair, t_end = t
            control = [i for n, intfs in per_nic.items() if not any(i in on_tor for i in intfs)
                       for i in intfs]
            control_base = sampler.mean_rate(control, t_start + timeline.warm, t_fault)
            resumed_fault = resumed(sampler, control, control_base, t_fault, t_repair)
            resumed_repair = resumed(sampler, control, control_base, t_repair, t_end)
            figures = self.measure(sent, sampler, fab, per_nic, control, (t_start + timeline.warm, t_fault),
                                   (resumed_fault + 1.0, t_repair), (resumed_repair + 1.0, t_end))
            figures.update({"datapath_pause_s": [round(resumed_fault - t_fault, 2),
                                                 round(resumed_repair - t_repair, 2)],
                            "datagrams_sent": sum(s for s, _ in counts),
                            "datagrams_dropped": sum(d for _, d in counts), "cpu_busy": round(busy, 3)})
            series = {name: [[round(x - t_fault, 2), round(v, 3)] for x, v in meter.rate_series(down)]
                      for name, meter in (("sent into the ToRs", sent), ("delivered", sampler))}
            return {**figures, "series": series, "setup": emu.describe()}

    def measure(self, sent: Sampler, delivered: Sampler, fab, per_nic: dict, control: list[str],
                base: tuple, during: tuple, after: tuple) -> dict:
        """What the segment sent into the ToRs and what they delivered before, during and after
        the fault (windows clear of the datapath's pauses: the hosts' neighbour entries wait for
        it too), rail 0's share, the `control` ports' (of the NICs the fault does not touch), and
        the NICs that stopped receiving during the fault."""
        down = [i for intfs in per_nic.values() for i in intfs]
        rail0 = [i for n, intfs in per_nic.items() if n.endswith("-n0") for i in intfs]
        s, d = sent.mean_rate, delivered.mean_rate
        return {"capacity_mbps": round(sum(fab.link_mbit(l) for l in fab.host_links()), 3),
                "baseline_mbps": round(s(down, *base), 3), "during_mbps": round(s(down, *during), 3),
                "repaired_mbps": round(s(down, *after), 3),
                "nic0_baseline_mbps": round(s(rail0, *base), 3),
                "nic0_during_mbps": round(s(rail0, *during), 3),
                "control_mbps": [round(s(control, *w), 3) for w in (base, during, after)],
                "delivered_mbps": [round(d(down, *w), 3) for w in (base, during, after)],
                "measured_s": [round(b - a, 2) for a, b in (base, during, after)],
                "ports": len(down), "ports_on_tor": sum(1 for l in fab.host_links() if l.b == TOR),
                "nics": len(per_nic),
                **self.stops(delivered, per_nic, set(control), during)}

    def stops(self, delivered: Sampler, per_nic: dict, control: set[str], during: tuple) -> dict:
        """The NICs that stopped receiving during the fault, and which of them the fault does not
        touch (their gaps are the emulator's: the datapath stalled)."""
        stopped = stopped_nics(delivered, per_nic, *during, self.knobs.window)
        return {"stopped_nics": stopped,
                "stopped_untouched": [n for n in stopped if all(i in control for i in per_nic[n])]}

    @staticmethod
    def play(sampler, load, faults, timeline):
        """The load for the whole timeline, the ToR failed after warm-up and baseline and repaired
        `fault` s later; (the flows' counts, (start, fault, repair, end) on the sampler's clock)."""
        load.start()
        t_start = time.monotonic() - sampler.t0
        schedule = Schedule()
        fault = schedule.fault(timeline.fault_at, lambda: faults.switch_down(TOR), timeline.fault)
        schedule.play(sampler.t0 + t_start, origin=sampler.t0)
        counts = load.finish()
        return counts, (t_start, fault.injected, fault.repaired,
                        min(t_start + timeline.seconds, time.monotonic() - sampler.t0))

    def judge(self, figures: dict) -> Judgement:
        dual, single = figures["dual_tor"], figures["single_tor"]
        # what the untouched NICs kept is the emulator's own drift from the baseline window
        c_base, c_during, c_after = dual["control_mbps"]
        drift = harness.ratio(c_during, c_base, 0.0), harness.ratio(c_after, c_base, 0.0)
        raw_kept = harness.ratio(dual["during_mbps"], dual["baseline_mbps"], 0.0)
        raw_recovered = harness.ratio(dual["repaired_mbps"], dual["baseline_mbps"], 0.0)
        kept = raw_kept / drift[0] if drift[0] else 0.0
        recovered = raw_recovered / drift[1] if drift[1] else 0.0
        expected = 1 - dual["ports_on_tor"] / dual["ports"]
        runs = [r for r in (dual, single) if r]
        window = figures["setup"].get("window_s", 5.0)
        stalled = dual.get("stopped_untouched", [])
        stopped = [n for n in dual["stopped_nics"] if n not in stalled]
        why_invalid = invalid_reasons(runs, window, stalled)
        ok_valid = not why_invalid
        dual_ok = abs(kept - expected) <= BAND and not stopped and recovered >= RECOVERED
        single_kept = single and harness.ratio(single["nic0_during_mbps"], single["nic0_baseline_mbps"], 0.0)
        single_ok = single is None or single_kept <= STOPPED
        # an empty window (the datapath never resumed during the fault) measured nothing, not 0%
        kept_text = f"kept {kept:.1%}" if dual["measured_s"][1] > 0 else "kept: not measured"
        measured = (f"dual-ToR: the hosts sent {dual['baseline_mbps']:.2f} Mbit/s into the ToRs "
                    f"({dual['capacity_mbps']:.2f} of host ports), {dual['during_mbps']:.2f} with {TOR} down "
                    f"({raw_kept:.1%}; the NICs off the ToR {drift[0]:.1%}: {kept_text} of their share), "
                    f"{dual['repaired_mbps']:.2f} after the repair ({raw_recovered:.1%}; untouched NICs "
                    f"{drift[1]:.1%}: {recovered:.1%}); "
                    f"the ToRs delivered {' / '.join(f'{x:.2f}' for x in dual['delivered_mbps'])} Mbit/s "
                    "(before / during / after, outside the pauses); "
                    f"{len(stopped)} of the {dual['ports_on_tor']} NICs on {TOR} stopped"
                    + (f" ({', '.join(stopped[:4])})" if stopped else "")
                    + f", {len(stalled)} of the others"
                    + f"; the datapath paused {dual['datapath_pause_s'][0]:.1f} s at the fault and "
                      f"{dual['datapath_pause_s'][1]:.1f} s at the repair (not measured); CPU "
                      f"{dual['cpu_busy']:.0%} busy")
        if single:
            measured += f"; single-ToR: NIC 0 of every host kept {single_kept:.1%}"
        if why_invalid:
            measured += "; not a valid measurement: " + "; ".join(why_invalid)
        return Judgement(
            verdict(dual_ok and single_ok, ok_valid),
            expectation=(f"all {dual['nics']} NICs send at full port rate; {TOR} carries "
                         f"{dual['ports_on_tor']} "
                         f"of the {dual['ports']} host ports, so the segment keeps {expected:.2%} "
                         "of its baseline, measured against the NICs off that ToR (accepted within "
                         f"{BAND * 100:.0f} points), "
                         "no NIC on it stops receiving for "
                         f"{figures['setup'].get('window_s', 5):g} s, and it is back at {RECOVERED:.0%} "
                         "after the repair"
                         + ("; single-ToR: NIC 0 of every host stops" if single else "")),
            measured=measured,
            derived={"kept": round(kept, 4), "expected_kept": round(expected, 4), "loss": round(1 - kept, 4),
                     "recovered": round(recovered, 4), "raw_kept": round(raw_kept, 4),
                     "untouched_kept": [round(d, 4) for d in drift]},
            headline=f"segment {kept_text} (exp. {expected:.2%}), {len(stopped)} NICs on the ToR stopped",
            busy=[r["cpu_busy"] for r in runs])

    def plot(self, result, path: Path) -> bool:
        fault = result.setup["warm_base_fault_after_s"][2]
        dual = result.figures["dual_tor"]
        # the judge's expectation in the series' raw terms: times what the untouched NICs kept
        drift = result.figures["untouched_kept"][0]
        levels = {f"expected during the fault ({result.figures['expected_kept']:.2%} kept, x {drift:.1%} "
                  "the untouched NICs kept)": dual["baseline_mbps"] * result.figures["expected_kept"] * drift}
        fault_at, repair = dual["datapath_pause_s"]
        paused = [(0.0, fault_at), (fault, fault + repair)]
        paper = {f"-{PAPER_LOSS:.2%}: one port lost per NIC on the ToR":
                 dual["baseline_mbps"] * (1 - PAPER_LOSS)}
        return plots.fault_timeline(self, result, path, [(0.0, fault)], f"ToR {TOR} down", levels,
                                    unmeasured=paused, paper=paper)
