"""C2: a NIC-ToR link fails under a busy host. Dual-ToR loses one of the host's 2 x NICs ports and
recovers at repair; single-ToR loses every flow on the link.

Also the shared workload of the fault scenarios (link-flap, one-way-fault, tor-failure import it):
TCP from every NIC of a busy host to the same NIC of a peer in its segment, several streams per
NIC spread over the NIC's ports. The host's sending rate is read from the counters of its links'
switch ends (what the ToRs received from it), sampled every 0.1 s.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from scenarios.base import Result, Scenario, verdict
from testbed.core.wait import sleep_until
from testbed.emulation.build import Emulation
from testbed.emulation.faults import Faults
from testbed.measure.meters import Sampler, iperf_intervals, longest_stall
from testbed.model import make_fabric
from testbed.workload import traffic

BUSY, PEER = "p0s0h0", "p0s0h1"      # two hosts of one segment: traffic stays under the ToRs


def hpn(single_tor: bool = False):
    return make_fabric("hpn", {"single_tor": True} if single_tor else {})


def pick_cport(emu: Emulation, src, dst, streams: int, dport: int) -> int:
    """A client port base whose `streams` consecutive ports the kernel spreads evenly over src's ports."""
    if len(src.ports) < 2:
        return 41000
    best, best_spread = 41000, -1
    for base in range(41000, 41000 + 16 * streams * 8, 16 * streams):
        devs = emu.net[src.host].route_devs(src.ip, dst.ip, "tcp",
                                            [base + i for i in range(streams)], dport)
        spread = min(devs.count(p) for p in src.ports)
        if spread > best_spread:
            best, best_spread = base, spread
        if spread == streams // len(src.ports):
            break
    return best


@dataclass
class Workload:
    """iperf3 from every NIC of each (src host, dst host) pair, `streams` TCP streams per NIC."""
    emu: Emulation
    pairs: list = field(default_factory=lambda: [(BUSY, PEER)])
    streams: int = 4
    interval: float = 0.2          # iperf3 report interval (s)
    stream_mbit: float | None = None   # cap each stream (iperf3 -b); None: as fast as TCP goes

    def start(self, seconds: float) -> "Workload":
        fab = self.emu.fabric
        self.flows, self.clients = [], []
        for n, (a, b) in enumerate(self.pairs):
            for src, dst in zip(fab.hosts[a].nics, fab.hosts[b].nics):
                dport = 5201 + 10 * n + src.index
                cport = pick_cport(self.emu, src, dst, self.streams, dport)
                self.flows.append(traffic.Flow(src, dst, dport=dport, sport=cport, parallel=self.streams))
        self.host_intfs = {h: [l.b_intf for l in fab.host_links() if l.a == h]
                           for h in {a for a, _ in self.pairs}}
        self.nic_intfs = {nic.name: [l.b_intf for l in fab.host_links() if l.a_intf in nic.ports]
                          for h in self.host_intfs for nic in fab.hosts[h].nics}
        self.sampler = Sampler(sorted({i for v in self.host_intfs.values() for i in v}),
                               interval=0.1, counter="rx_bytes", queues=False).__enter__()
        for flow in self.flows:
            traffic.start_server(self.emu, flow.dst, flow.dport, self.interval)
        for flow in self.flows:
            t = self.now()
            self.clients.append((traffic.start_client(self.emu, flow, seconds,
                                                      interval=self.interval,
                                                      rate_mbit=self.stream_mbit,
                                                      server_output=True), t))
        self.seconds = seconds
        return self

    def now(self) -> float:
        """Seconds since the sampler started: the time axis of every series."""
        return time.monotonic() - self.sampler.t0

    def at(self, t: float) -> None:
        sleep_until(self.sampler.t0 + t)

    def finish(self) -> None:
        try:
            self.results = [(client.flow, traffic.wait_client(self.emu, client, self.seconds + 20), t)
                            for client, t in self.clients]
        finally:
            self.sampler.__exit__(None, None, None)

    # ---- what was measured ----
    def rate(self, intfs, start: float, end: float) -> float:
        return self.sampler.mean_rate(intfs, start, end)

    def series(self, intfs, t_ref: float = 0.0, smooth: int = 2) -> list[list[float]]:
        points = self.sampler.rate_series(intfs)
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


def stalled(series, start: float, end: float, threshold: float) -> float:
    """Longest stall (s) of a rate series inside [start, end]."""
    return longest_stall([(t, v) for t, v in series if start <= t <= end], threshold)


class DualTorLinkFailure(Scenario):
    name = "dual-tor-link-failure"
    claim = "C2"
    title = "one NIC-ToR link fails under a busy host: dual-ToR vs single-ToR"
    paper = ("HPN sec. 9: failing one NIC-ToR link cost 6.25% of throughput (1 of a host's 16 200G "
             "ports) and recovered the moment it was repaired; single-ToR halted the job")

    def run_variant(self, single_tor: bool, warm: float, base: float, fault: float, after: float) -> dict:
        fab = hpn(single_tor)
        with Emulation(fab) as emu, Faults(emu) as faults:
            w = Workload(emu).start(warm + base + fault + after)
            host_intfs = w.host_intfs[BUSY]
            nic0 = fab.hosts[BUSY].nics[0]
            link = fab.host_link(nic0.ports[0])
            w.at(warm + base)
            t_fault = w.now()
            faults.link_down(link)
            w.at(warm + base + fault)
            t_repair = w.now()
            faults.link_up(link)
            w.finish()
            end = w.now()
            baseline = w.rate(host_intfs, warm, t_fault)
            during = w.rate(host_intfs, t_fault + 0.5, t_repair)
            repaired = w.rate(host_intfs, t_repair + 1.0, end)
            nic_base = w.rate(w.nic_intfs[nic0.name], warm, t_fault)
            nic_during = w.rate(w.nic_intfs[nic0.name], t_fault + 0.5, t_repair)
            series = w.series(host_intfs, t_ref=t_fault)
            recover = next((t for t, v in series if t > t_repair - t_fault and v >= 0.9 * baseline), None)
            return {"ports": len(host_intfs), "nics": len(fab.hosts[BUSY].nics),
                    "line_mbps": fab.line_mbit(BUSY),
                    "baseline_mbps": round(baseline, 2), "during_mbps": round(during, 2),
                    "repaired_mbps": round(repaired, 2),
                    "loss": round(1 - during / baseline, 3) if baseline else None,
                    "failed_nic_kept": round(nic_during / nic_base, 3) if nic_base else None,
                    "recovered_s_after_repair": None if recover is None else round(recover - (t_repair - t_fault), 2),
                    "fault_s": round(t_repair - t_fault, 2), "series": series,
                    "setup": emu.describe()}

    def measure(self, quick: bool) -> Result:
        warm, base, fault, after = (1.5, 2.0, 2.5, 2.5) if quick else (2.0, 4.0, 6.0, 5.0)
        dual = self.run_variant(False, warm, base, fault, after)
        single = self.run_variant(True, warm, base, fault, after)
        n = dual["nics"]
        expected = 1 / (2 * n)
        valid = all(v["baseline_mbps"] >= 0.7 * v["line_mbps"] for v in (dual, single))
        dual_ok = (0.6 * expected <= dual["loss"] <= 1.4 * expected and dual["failed_nic_kept"] >= 0.3
                   and dual["repaired_mbps"] >= 0.85 * dual["baseline_mbps"])
        single_ok = single["failed_nic_kept"] <= 0.05
        figures = {k: {x: y for x, y in v.items() if x not in ("series", "setup")}
                   for k, v in (("dual_tor", dual), ("single_tor", single))}
        figures["expected_loss_dual"] = round(expected, 3)
        return Result(
            scenario=self.name, claim=self.claim, paper=self.paper,
            expectation=(f"the busy host sends from its {n} NICs ({2 * n} ports dual-ToR) to a host in its "
                         f"segment; one NIC-ToR link fails for {fault:.0f} s. Dual-ToR: the host loses "
                         f"1/(2 x {n} NICs) = {expected:.1%} of its sending throughput (the NIC goes on "
                         f"on its other port) and is back at repair. Single-ToR: the NIC's flows stop "
                         f"(the host loses 1/{n}). The claim is about the busy host's own throughput, "
                         f"so it is measured on its links (what its ToRs receive from it); the peer is "
                         f"in the same segment so that the data never crosses the 15:1 core"),
            measured=(f"dual-ToR: {dual['baseline_mbps']:.1f} -> {dual['during_mbps']:.1f} Mbit/s, loss "
                      f"{dual['loss']:.1%} (expected {expected:.1%}), the failed NIC kept "
                      f"{dual['failed_nic_kept']:.0%} of its rate, {dual['repaired_mbps']:.1f} Mbit/s after "
                      f"repair (>= 90% of baseline {dual['recovered_s_after_repair']} s after it); "
                      f"single-ToR: {single['baseline_mbps']:.1f} -> {single['during_mbps']:.1f} Mbit/s, "
                      f"loss {single['loss']:.1%}, the failed NIC kept {single['failed_nic_kept']:.0%}, "
                      f"back to 90% {single['recovered_s_after_repair']} s after repair"),
            verdict=verdict(dual_ok and single_ok, valid),
            figures=figures,
            setup={"fabric": "hpn default (2 pods, 2 hosts/segment, 2 NICs/host), single_tor for the "
                             "baseline", "busy_host": BUSY, "peer": PEER, "streams_per_nic": 4,
                   "warm_base_fault_after_s": [warm, base, fault, after], "dual": dual["setup"],
                   "single": single["setup"], "x_label": "time since the link failed (s)",
                   "y_label": "busy host sending (Mbit/s)"},
            series={"dual-ToR": dual["series"], "single-ToR": single["series"]})


SCENARIO = DualTorLinkFailure
