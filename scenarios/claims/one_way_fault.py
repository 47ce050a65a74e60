"""C4: the NIC-to-ToR direction of a link dies, the other direction and carrier stay up. Carrier-based
failover never notices and the flows hashed onto that port stop for good; the host-side probe
detector (testbed/inhost/detector.py) takes the port out of the NIC's bond and every flow moves on.

The NICs send at 45% of their line rate, so that all of a NIC's streams fit on its other port:
the claim is about noticing the fault, not about capacity. At full rate the streams moved onto
the remaining port fought the ones already there, and a retransmission lost in that full queue
again and again could back off (0.2, 0.4, 0.8, 1.6 s ...) for most of the fault, so a stream
could look stuck although the detector had done its work (docs/claims.md, C4)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from testbed.emulation.detectors import Detectors
from testbed.emulation.factory import make_emulation
from testbed.emulation.faults.inject import Faults, Handle
from testbed.scenario import fault_harness as harness
from testbed.scenario import plots
from testbed.scenario.base import Judgement, verdict
from testbed.scenario.fault_harness import BUSY, PEER, FaultKnobs, Workload
from testbed.scenario.timeline import Timeline


@dataclass(frozen=True)
class OneWayKnobs(FaultKnobs):
    load: float = 0.45      # of each NIC's line rate: one port can carry all of it
    base: float = 3.0
    after: float = 2.0
    interval: float = 0.015     # the detector's probe interval per port (labs/04: its trade-off)
    dead_after: float = 0.06    # the silence that takes a port out of its bond
    QUICK: ClassVar[dict] = {"warm": 1.5, "base": 1.5, "fault": 4.0, "after": 1.0}
    BOUNDS: ClassVar[dict] = {**FaultKnobs.BOUNDS, "load": (0.05, 1.0, "of a NIC's line rate"),
                              "interval": (0.001, 1.0, "seconds"), "dead_after": (0.002, 10.0, "seconds")}
    HELP: ClassVar[dict] = {**FaultKnobs.HELP,
                            "load": "each NIC's sending rate, a fraction of its line rate (<= 0.5)",
                            "interval": "s between the detector's probes on each port",
                            "dead_after": "s of silence after which the detector takes a port out"}


def cut(emu, faults: Faults, link, seen: dict) -> Handle:
    """Drop the NIC-to-ToR direction of `link`; whether its carrier stayed up goes in `seen`."""
    handle = faults.one_way(link, "up")
    seen["carrier_up"] = emu.net[BUSY].cmd(f"cat /sys/class/net/{link.a_intf}/carrier").strip() == "1"
    return handle


def stream_figures(w: Workload, nic0, link, events: list) -> dict:
    """How NIC 0's streams fared in the fault: stalls per stream (at the receiver), stuck ones,
    when the detector (if any) took the port out, and the streams on the faulty port over time."""
    t_fault, t_repair = w.t_fault, w.t_repair
    t_mono = w.sampler.t0 + t_fault
    downs = [e for e in events if e["event"] == "down" and e["port"] == link.a_intf and e["t"] >= t_mono]
    false = [e for e in events if e["event"] == "down" and (e["t"] < t_mono or e["port"] != link.a_intf)]
    streams = w.streams_of(nic0.name)
    nic_base = w.baseline(w.nic_intfs[nic0.name])
    per_stream_base = nic_base / max(len(streams), 1)
    on_port = {k: v for k, v in streams.items() if k.endswith(":" + link.a_intf)}
    window = t_repair - t_fault
    stalls = {k: round(harness.stalled(v, t_fault, t_repair + 0.05, 0.05 * per_stream_base), 2)
              for k, v in streams.items()}
    stuck = [k for k, s in stalls.items() if s >= 0.8 * window]
    times = sorted({round(t, 2) for v in on_port.values() for t, _ in v})
    rounded = [{round(t, 2): y for t, y in v} for v in on_port.values()]
    affected = [[round(t - t_fault, 2), round(sum(v.get(t, 0.0) for v in rounded), 2)] for t in times]
    return {"streams": len(streams), "streams_on_faulty_port": len(on_port),
            "stuck_streams": len(stuck), "longest_stream_stall_s": max(stalls.values(), default=0.0),
            "stalls_s": stalls, "fault_s": round(window, 2),
            "detected_ms": round((downs[0]["t"] - t_mono) * 1000) if downs else None,
            "false_downs": len(false),      # a healthy port taken out (probes late on a busy CPU)
            "nic_baseline_mbps": round(nic_base, 2),
            "nic_during_mbps": round(w.during(w.nic_intfs[nic0.name]), 2),
            "affected_series": affected}


def expectation(fault: float, streams: int, load: float, interval: float = 0.015,
                dead_after: float = 0.06) -> str:
    return (f"the busy host's NIC 0 sends {streams} TCP streams at {load:.0%} of its line rate (one "
            f"port can carry them all), about half hashed onto port 0, whose NIC-to-ToR direction then "
            f"drops everything for {fault:.0f} s while carrier stays up. Carrier-based failover (the "
            f"default): those streams are stuck for the whole fault and the NIC loses their share. With "
            f"the probe detector (ARP to the gateway every {interval * 1000:g} ms per port, a port silent "
            f"for {dead_after * 1000:g} ms leaves the bond): the port is out in about "
            f"{dead_after + interval:.2g} s (plus what a busy CPU delays the probes), every stream moves "
            f"to port 1 and resumes before the repair: no stream stuck (stalled for 80% of the fault or "
            f"more; stalls seen at the receiver, iperf3's 0.2 s intervals), what remains is TCP's "
            f"retransmission timeout")


def measured(carrier: dict, probed: dict) -> str:
    return (f"carrier only: carrier {'up' if carrier['carrier_up'] else 'DOWN'}, "
            f"{carrier['stuck_streams']} of {carrier['streams']} streams stuck for the whole fault "
            f"({carrier['streams_on_faulty_port']} on the faulty port); with the detector: port out "
            f"{probed['detected_ms']} ms after the fault, {probed['stuck_streams']} streams stuck, "
            f"longest stream stall {probed['longest_stream_stall_s']} s; NIC 0 "
            f"{probed['nic_baseline_mbps']:.1f} -> {probed['nic_during_mbps']:.1f} Mbit/s (carrier "
            f"only: {carrier['nic_baseline_mbps']:.1f} -> {carrier['nic_during_mbps']:.1f})")


# what the series are: the rate the peer received from the streams that had hashed onto the port
# whose NIC-to-ToR direction died (a recorded run's setup may carry an older wording)
Y_LABEL = "received from the streams on the dead port (Mbit/s)"


class OneWayFault(harness.FaultScenario, name="one-way-fault", claim="C4", tour=True):
    title = "a one-direction link fault: carrier-based failover vs the probe detector"
    paper = ("HPN lessons: a link dead in the NIC-to-ToR direction only; the NIC ignored Link Fault "
             "Signaling and kept sending, losing packets at scale; dual-ToR made it a slowdown")
    fixed: ClassVar[dict] = {"single_tor": "a single-ported NIC has no other port to move its flows to"}
    Knobs = OneWayKnobs

    def meaningful(self) -> None:
        super().meaningful()
        if self.knobs.load > 0.5:
            self.refuse(f"load={self.knobs.load}: above 0.5 one port cannot carry all of a NIC's "
                        "streams, and the claim is about noticing the fault, not about capacity")
        if self.knobs.dead_after <= self.knobs.interval:
            self.refuse(f"dead_after={self.knobs.dead_after} must exceed interval={self.knobs.interval}: "
                        "a port would be taken out between two probes")
        if self.knobs.streams < 2:
            self.refuse("streams=1: needs 2 or more streams per NIC, so that some hash onto each port")

    def run(self, quick: bool) -> dict:
        timeline = self.knobs.timeline()
        with make_emulation(self.fabric(), servers=self.servers) as emu:
            carrier = self.phase(emu, False, timeline)
            probed = self.phase(emu, True, timeline)
            setup = emu.describe()
        series = {"carrier-based failover": carrier.pop("affected_series"),
                  "probe detector": probed.pop("affected_series")}
        return {"carrier_only": carrier, "with_detector": probed, "series": series,
                "setup": {"fabric": "hpn", "busy_host": BUSY, "peer": PEER, "emulation": setup,
                          "streams_per_nic": self.knobs.streams, "load": self.knobs.load,
                          "warm_base_fault_after_s": timeline.steps(),
                          "x_label": "time since the fault (s)",
                          "y_label": Y_LABEL}}

    def phase(self, emu, detector: bool, timeline: Timeline) -> dict:
        """One fault on the running fabric, with or without the probe detector on the busy host."""
        fab = emu.fabric
        nic0, link = harness.first_link(fab)
        k = self.knobs
        with Detectors(emu, [BUSY] if detector else [], k.interval, k.dead_after) as detectors, \
                Faults(emu) as faults:
            mbit = k.load * fab.line_mbit(nic0) / k.streams
            w = Workload(emu, streams=k.streams, stream_mbit=mbit).start(timeline)
            seen: dict = {}
            w.play(lambda: cut(emu, faults, link, seen))
            w.finish()
            events = detectors.events(BUSY) if detector else []
        return {"carrier_up": seen["carrier_up"], **stream_figures(w, nic0, link, events)}

    def judge(self, figures: dict) -> Judgement:
        carrier, probed = figures["carrier_only"], figures["with_detector"]
        fault = figures["setup"]["warm_base_fault_after_s"][2]
        # some streams on the faulty port. iperf3's waiting is not read (testbed/measure/
        # validity.py, ENDPOINTS) and no baseline is asked of it: the verdict counts streams stuck
        # for most of the fault, which a slow receiver does not make, and an eager detector's
        # false downs (what lab 4 shows) lower the baseline by the fabric's doing
        valid = carrier["streams_on_faulty_port"] > 0 and probed["streams_on_faulty_port"] > 0
        ok = (carrier["carrier_up"] and carrier["stuck_streams"] >= 1
              and probed["detected_ms"] is not None and probed["stuck_streams"] == 0)
        k = self.knobs_of(figures)
        return Judgement(verdict(ok, valid),
                         expectation=expectation(fault, k.streams, k.load, k.interval, k.dead_after),
                         measured=measured(carrier, probed),
                         headline=f"stuck streams: carrier {carrier['stuck_streams']}, detector "
                                  f"{probed['stuck_streams']} (out in {probed['detected_ms']} ms)")

    def plot(self, result, path: Path) -> bool:
        carrier, probed = result.figures["carrier_only"], result.figures["with_detector"]
        fault = probed["fault_s"]
        # what the streams on the faulty port sent before it: where they resume with the detector
        before = probed["nic_baseline_mbps"] * probed["streams_on_faulty_port"] / max(probed["streams"], 1)
        detected = {} if probed["detected_ms"] is None else \
            {f"detector took the port out ({probed['detected_ms']} ms)": probed["detected_ms"] / 1000}
        # iperf3's receiver reports every 0.2 s and paced streams arrive in bursts: a 1 s mean too
        return plots.fault_timeline(
            self, result, path, [(0.0, fault)], "NIC-to-ToR direction dead", smooth=5,
            levels={"expected, detector: their rate before the fault": before},
            paper={"the NIC kept sending into the dead direction (0 received)": 0.0},
            marks=detected, y_label=Y_LABEL,
            noted=f"paper: LFS ignored, the NIC kept sending into a dead direction\nhere: stuck streams "
                  f"carrier {carrier['stuck_streams']}, detector {probed['stuck_streams']}")
