"""C4: the NIC-to-ToR direction of a link dies, the other direction and carrier stay up. Carrier-based
failover never notices and the flows hashed onto that port stop for good; the host-side probe
detector (testbed/detector.py) takes the port out of the NIC's bond and every flow moves on.

The NICs send at 45% of their line rate, so that all of a NIC's streams fit on its other port:
the claim is about noticing the fault, not about capacity. At full rate the streams moved onto
the remaining port fought the ones already there, and a retransmission lost in that full queue
again and again could back off (0.2, 0.4, 0.8, 1.6 s ...) for most of the fault: one stream in
about five runs looked stuck even though the detector had done its work in 0.1 s."""
from __future__ import annotations

from scenarios.base import Result, Scenario, verdict
from scenarios.dual_tor_link_failure import BUSY, PEER, Workload, hpn, stalled
from testbed.emulation.build import Emulation
from testbed.emulation.detectors import Detectors
from testbed.emulation.faults import Faults

LOAD = 0.45   # of each NIC's line rate: one port can carry all of it
STREAMS = 4


class OneWayFault(Scenario):
    name = "one-way-fault"
    claim = "C4"
    title = "a one-direction link fault: carrier-based failover vs the probe detector"
    paper = ("HPN lessons: a link dead in the NIC-to-ToR direction only; the NIC ignored Link Fault "
             "Signaling and kept sending, losing packets at scale; dual-ToR made it a slowdown")

    def phase(self, emu, detector: bool, warm, base, fault, after) -> dict:
        fab = emu.fabric
        nic0 = fab.hosts[BUSY].nics[0]
        link = fab.host_link(nic0.ports[0])
        detectors = Detectors(emu, [BUSY] if detector else [])
        with detectors, Faults(emu) as faults:
            mbit = LOAD * fab.line_mbit(nic0) / STREAMS
            w = Workload(emu, streams=STREAMS, stream_mbit=mbit).start(warm + base + fault + after)
            w.at(warm + base)
            t_fault = w.now()
            t_mono = w.sampler.t0 + t_fault
            faults.one_way(link, "up")
            carrier = emu.net[BUSY].cmd(f"cat /sys/class/net/{link.a_intf}/carrier").strip() == "1"
            w.at(warm + base + fault)
            t_repair = w.now()
            faults.repair_all()
            w.finish()
            events = detectors.events(BUSY) if detector else []
        downs = [e for e in events if e["event"] == "down" and e["port"] == link.a_intf and e["t"] >= t_mono]
        streams = w.streams_of(nic0.name)
        nic_base = w.rate(w.nic_intfs[nic0.name], warm, t_fault)
        per_stream_base = nic_base / max(len(streams), 1)
        on_port = {k: v for k, v in streams.items() if k.endswith(":" + link.a_intf)}
        window = t_repair - t_fault
        stalls = {k: round(stalled(v, t_fault, t_repair + 0.05, 0.05 * per_stream_base), 2)
                  for k, v in streams.items()}
        stuck = [k for k, s in stalls.items() if s >= 0.8 * window]
        times = sorted({round(t, 2) for v in on_port.values() for t, _ in v})
        rounded = [{round(t, 2): y for t, y in v} for v in on_port.values()]
        affected = [[round(t - t_fault, 2), round(sum(v.get(t, 0.0) for v in rounded), 2)] for t in times]
        return {"carrier_up": carrier, "streams": len(streams), "streams_on_faulty_port": len(on_port),
                "stuck_streams": len(stuck), "longest_stream_stall_s": max(stalls.values(), default=0.0),
                "stalls_s": stalls, "fault_s": round(window, 2),
                "detected_ms": round((downs[0]["t"] - t_mono) * 1000) if downs else None,
                "nic_baseline_mbps": round(nic_base, 2),
                "nic_during_mbps": round(w.rate(w.nic_intfs[nic0.name], t_fault + 0.5, t_repair), 2),
                "affected_series": affected}

    def measure(self, quick: bool) -> Result:
        warm, base, fault, after = (1.5, 1.5, 4.0, 1.0) if quick else (2.0, 3.0, 6.0, 2.0)
        with Emulation(hpn()) as emu:
            carrier = self.phase(emu, False, warm, base, fault, after)
            probed = self.phase(emu, True, warm, base, fault, after)
            setup = emu.describe()
        valid = carrier["streams_on_faulty_port"] > 0 and probed["streams_on_faulty_port"] > 0
        ok = (carrier["carrier_up"] and carrier["stuck_streams"] >= 1
              and probed["detected_ms"] is not None and probed["stuck_streams"] == 0)
        figures = {"carrier_only": {k: v for k, v in carrier.items() if k != "affected_series"},
                   "with_detector": {k: v for k, v in probed.items() if k != "affected_series"}}
        return Result(
            scenario=self.name, claim=self.claim, paper=self.paper,
            expectation=(f"the busy host's NIC 0 sends {STREAMS} TCP streams at {LOAD:.0%} of its line rate "
                         f"(one port can carry them all), about half hashed onto port 0, whose "
                         f"NIC-to-ToR direction then drops everything for {fault:.0f} s while carrier stays "
                         f"up. Carrier-based failover (the default): those streams are stuck for the whole "
                         f"fault and the NIC loses their share. With the probe detector (ARP to the gateway every 15 ms per port, a port "
                         f"silent for 60 ms leaves the bond): the port is out in about 0.1 s, every stream "
                         f"moves to port 1 and resumes before the repair: no stream stuck (stalled for 80% of "
                         f"the fault or more; stalls seen at the receiver, iperf3's 0.2 s intervals), "
                         f"what remains is TCP's retransmission timeout"),
            measured=(f"carrier only: carrier {'up' if carrier['carrier_up'] else 'DOWN'}, "
                      f"{carrier['stuck_streams']} of {carrier['streams']} streams stuck for the whole fault "
                      f"({carrier['streams_on_faulty_port']} on the faulty port); with the detector: port out "
                      f"{probed['detected_ms']} ms after the fault, {probed['stuck_streams']} streams stuck, "
                      f"longest stream stall {probed['longest_stream_stall_s']} s; NIC 0 "
                      f"{probed['nic_baseline_mbps']:.1f} -> {probed['nic_during_mbps']:.1f} Mbit/s "
                      f"(carrier only: {carrier['nic_baseline_mbps']:.1f} -> {carrier['nic_during_mbps']:.1f})"),
            verdict=verdict(ok, valid),
            figures=figures,
            setup={"fabric": "hpn default", "busy_host": BUSY, "peer": PEER, "emulation": setup,
                   "warm_base_fault_after_s": [warm, base, fault, after],
                   "x_label": "time since the fault (s)",
                   "y_label": "streams hashed onto the faulty port (Mbit/s)"},
            series={"carrier-based failover": carrier["affected_series"],
                    "probe detector": probed["affected_series"]})


SCENARIO = OneWayFault
