"""The harness the fault scenarios share (dual-tor-link-failure, link-flap, one-way-fault,
tor-failure): the fabric, the workload, and their measures; the timeline a fault follows and the engine
that plays it are testbed/scenario/timeline.py.

The workload: TCP from every NIC of a busy host to the same NIC of a peer in its segment, several
streams per NIC spread over the NIC's ports. The host's sending rate is read from the counters of
its links' switch ends (what the ToRs received from it), sampled every 0.1 s.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import ClassVar

from testbed.core import progress
from testbed.emulation.build import Emulation
from testbed.measure import validity, waitlog
from testbed.measure.meters import iperf_intervals, longest_stall
from testbed.scenario.base import Scenario
from testbed.scenario.knobs import Knobs
from testbed.scenario.timeline import Schedule, Timeline
from testbed.workload import traffic
from testbed.workload.hashports import cport_base

BUSY, PEER = "p0s0h0", "p0s0h1"      # two hosts of one segment: traffic stays under the ToRs
VARIANTS = (("dual_tor", "dual", "dual-ToR", False), ("single_tor", "single", "single-ToR", True))


SECONDS = (0.5, 120.0, "seconds")
# the paper's cost of one lost NIC port (HPN secs. 2-3, 9): one of a host's 16 200G ports (8 NICs
# x 2), which the fault scenarios' figures mark beside this fabric's own expectation
PAPER_LOSS = 1 / 16
FIXED = {"single_tor": "the scenario runs dual-ToR and single-ToR HPN itself"}


@dataclass(frozen=True)
class RunKnobs(Knobs):
    """What every fault scenario has: warm-up, baseline, the time after the fault, streams per NIC."""
    warm: float = 2.0
    base: float = 4.0
    after: float = 5.0
    streams: int = 4
    QUICK: ClassVar[dict] = {"warm": 1.5, "base": 2.0, "after": 2.5}
    BOUNDS: ClassVar[dict] = {"warm": SECONDS, "base": SECONDS, "fault": SECONDS, "after": SECONDS,
                              "streams": (1, 32, "TCP streams per NIC")}
    HELP: ClassVar[dict] = {"warm": "s of warm-up, not measured (TCP slow start)",
                            "base": "s of baseline before the fault", "fault": "s the fault lasts",
                            "after": "s measured after the repair", "streams": "TCP streams per NIC"}


@dataclass(frozen=True)
class FaultKnobs(RunKnobs):
    """... and a fault of `fault` s."""
    fault: float = 6.0
    QUICK: ClassVar[dict] = {**RunKnobs.QUICK, "fault": 2.5}

    def timeline(self) -> Timeline:
        return Timeline(self.warm, self.base, self.fault, self.after)


def needs_peer(scenario) -> None:
    """The fault scenarios' busy host sends to a peer in its segment: refuse a segment of one."""
    if scenario.fabric().params.hosts < 2:
        scenario.refuse("needs hosts >= 2: the busy host p0s0h0 sends to p0s0h1 in its segment")


class FaultScenario(Scenario):
    """What the fault scenarios share: HPN, with the ToR variants the scenario runs itself, and a
    busy host with a peer in its segment. `run` puts `variant(single_tor, timeline)` on dual-ToR
    and (if `single_baseline`) single-ToR HPN; a scenario adds to `setup` what it varies."""
    families = ("hpn",)
    fixed: ClassVar[dict] = FIXED
    x_label = "time since the fault (s)"
    y_label = "busy host sending (Mbit/s)"

    def meaningful(self) -> None:
        needs_peer(self)

    def timeline(self) -> Timeline:
        return self.knobs.timeline()

    def single_baseline(self) -> bool:
        return True

    def setup(self, timeline: Timeline) -> dict:
        return {"fabric": "hpn; single_tor for the baseline", "busy_host": BUSY, "peer": PEER,
                "streams_per_nic": self.knobs.streams, "warm_base_fault_after_s": timeline.steps(),
                "x_label": self.x_label, "y_label": self.y_label}

    def variant(self, single_tor: bool, timeline: Timeline) -> dict:
        raise NotImplementedError

    def run(self, quick: bool) -> dict:
        timeline = self.timeline()
        return dual_and_single(lambda single_tor: self.variant(single_tor, timeline),
                               self.setup(timeline), single=self.single_baseline())


@dataclass
class Workload:
    """iperf3 from every NIC of each (src host, dst host) pair, `streams` TCP streams per NIC,
    for the whole of a timeline; `play` puts the fault in it."""
    emu: Emulation
    pairs: list = field(default_factory=lambda: [(BUSY, PEER)])
    streams: int = 4
    interval: float = 0.2          # iperf3 report interval (s)
    stream_mbit: float | None = None   # cap each stream (iperf3 -b); None: as fast as TCP goes

    def start(self, timeline: Timeline) -> Workload:
        fab = self.emu.fabric
        self.timeline, self.seconds = timeline, timeline.seconds
        self.flows, self.clients = [], []
        for n, (a, b) in enumerate(self.pairs):
            for src, dst in zip(fab.hosts[a].nics, fab.hosts[b].nics):
                dport = 5201 + 10 * n + src.index
                cport = cport_base(self.emu, src, dst, self.streams, dport)
                self.flows.append(traffic.Flow(src, dst, dport=dport, sport=cport, parallel=self.streams))
        self.host_intfs = {h: [l.b_intf for l in fab.host_links() if l.a == h]
                           for h in {a for a, _ in self.pairs}}
        self.nic_intfs = {nic.name: [l.b_intf for l in fab.host_links() if l.a_intf in nic.ports]
                          for h in self.host_intfs for nic in fab.hosts[h].nics}
        self.sampler = self.emu.sampler(sorted({i for v in self.host_intfs.values() for i in v}),
                               interval=0.1, counter="rx_bytes", queues=False).__enter__()
        for flow in self.flows:
            traffic.start_server(self.emu, flow.dst, flow.dport, self.interval)
        for flow in self.flows:
            t = self.now()
            self.clients.append((traffic.start_client(self.emu, flow, self.seconds,
                                                      interval=self.interval,
                                                      rate_mbit=self.stream_mbit,
                                                      server_output=True), t))
        self.t_start = self.now()
        return self

    def now(self) -> float:
        """Seconds since the sampler started: the time axis of every series."""
        return time.monotonic() - self.sampler.t0

    def play(self, inject, by_itself: bool = False):
        """Inject the fault once warm-up and baseline are over (`inject()` returns its Handle)
        and repair it `fault` s later, or (`by_itself`: a flap train) let it end when `inject`
        returns: the timeline engine (testbed/scenario/timeline.py). When each happened, on the
        workload's clock, is kept as t_fault and t_repair. Returns the fault's Handle. The
        timeline starts once every client is started, not when the sampler did: starting the
        servers and clients takes a few seconds on a slow CPU (a VM under QEMU TCG), which must
        not eat the warm-up."""
        tl = self.timeline
        schedule = Schedule(end=tl.seconds)
        fault = schedule.fault(tl.fault_at, inject, None if by_itself else tl.fault)
        # the fabric's waiting over the timeline, not iperf3's: these verdicts read rates relative
        # to the baseline, and whether iperf3 kept up from the baseline itself (`saturated`;
        # testbed/measure/validity.py, ENDPOINTS)
        with progress.phase(f"traffic: warm-up, baseline, fault ({tl.fault_at:g} s + the fault)"), \
                waitlog.run(skip=validity.ENDPOINTS):
            schedule.play(self.sampler.t0 + self.t_start, origin=self.sampler.t0)
        self.t_fault, self.t_repair = fault.injected, fault.repaired
        return fault.handle

    @progress.phase("traffic: until every client ends")
    def finish(self) -> None:
        try:
            self.results = [(client.flow, traffic.wait_client(self.emu, client, self.seconds + 20), t)
                            for client, t in self.clients]
        finally:
            self.sampler.__exit__(None, None, None)
        self.t_end = min(self.now(), self.all_running_until())

    def all_running_until(self) -> float:
        """When the first client to end ended, at the earliest: each runs `seconds` from its own
        start. What is measured ends there: later, that client's traffic has ended by itself,
        which is no stall of the fabric (clients start one after another, further apart on a
        slow CPU: under QEMU TCG link-flap's flapping NIC, whose client started first, read as
        stalled at the end, bench/results/journal.md)."""
        return min(t for _, t in self.clients) + self.seconds

    # ---- what was measured ----
    def rate(self, intfs, start: float, end: float) -> float:
        return self.sampler.mean_rate(intfs, start, end)

    def baseline(self, intfs) -> float:
        """Mean rate from the end of warm-up to the fault."""
        return self.rate(intfs, self.t_start + self.timeline.warm, self.t_fault)

    def during(self, intfs, settle: float = 0.5) -> float:
        """Mean rate during the fault, from `settle` s after it started."""
        return self.rate(intfs, self.t_fault + settle, self.t_repair)

    def repaired(self, intfs, settle: float) -> float:
        """Mean rate from `settle` s after the repair to the end."""
        return self.rate(intfs, self.t_repair + settle, self.t_end)

    def series(self, intfs, t_ref: float = 0.0, smooth: int = 2) -> list[list[float]]:
        """[time - t_ref, rate] of `intfs`, a running mean of `smooth` samples, up to `t_end`
        (after it a client's traffic ended by itself: no figure reads it, none should draw it)."""
        points = [p for p in self.sampler.rate_series(intfs) if p[0] <= self.t_end]
        out = []
        for k in range(len(points)):
            window = points[max(0, k - smooth + 1):k + 1]
            out.append([round(points[k][0] - t_ref, 2), round(sum(v for _, v in window) / len(window), 2)])
        return out

    def streams_of(self, nic_name: str) -> dict[str, list[tuple[float, float]]]:
        """Per-stream rates of a NIC's iperf3 client as its receiver saw them (what arrived, not
        what the sender wrote into its socket buffer), keyed 'sport:port it left on'."""
        out = {}
        for flow, result, t in self.results:
            if flow.src.name != nic_name:
                continue
            received = result["server_output_json"]
            series = iperf_intervals(received, offset=t)["streams"]
            for c in received["start"]["connected"]:
                sport = c["remote_port"]
                dev = self.emu.net[flow.src.host].route_dev(flow.src.ip, flow.dst.ip, "tcp", sport,
                                                            flow.dport)
                out[f"{sport}:{dev or '?'}"] = series.get(c["socket"], [])
        return out


def first_link(fab, host: str = BUSY):
    """NIC 0 of `host` and the link of its port 0: what the link faults hit."""
    nic0 = fab.hosts[host].nics[0]
    return nic0, fab.host_link(nic0.ports[0])


def stalled(series, start: float, end: float, threshold: float) -> float:
    """Longest stall (s) of a rate series inside [start, end]."""
    return longest_stall([(t, v) for t, v in series if start <= t <= end], threshold)


def ratio(part: float, whole: float, default=None):
    return round(part / whole, 3) if whole else default


def saturated(*hosts: dict) -> bool:
    """Whether every host's baseline filled its links (figures baseline_mbps, line_mbps): if one's
    did not, the CPU, not the fabric, was the bottleneck (validity.kept_up)."""
    return all(validity.kept_up(h["baseline_mbps"], h["line_mbps"]) for h in hosts)


def dual_and_single(variant, setup: dict, single: bool = True) -> dict:
    """The figures of `variant(single_tor)` (a dict with its own "setup" and "series") on dual-ToR
    HPN and, if `single`, on single-ToR HPN (else None): under dual_tor / single_tor, with each
    bring-up in the setup (dual / single) and each series (dual-ToR / single-ToR)."""
    figures = {"setup": dict(setup), "series": {}}
    for key, short, label, single_tor in VARIANTS:
        if single_tor and not single:
            figures[key] = None
            continue
        with progress.phase(label):
            measured = variant(single_tor)
        figures["setup"][short] = measured.pop("setup")
        series = measured.pop("series")      # one series, or several by name
        for name, points in (series.items() if isinstance(series, dict) else [(None, series)]):
            figures["series"][f"{label}: {name}" if name else label] = points
        figures[key] = measured
    return figures
