"""C5 dual-plane balance: the two ToR ports toward one NIC, with and without dual-plane.

One HPN pod (one segment, four hosts), once with `dual_plane=false` (every ToR reaches every
aggregation switch, which hashes each flow toward one of the destination's two ToRs) and once as
HPN builds it (dual-plane: a ToR reaches only the aggregation switches of its plane, so a flow
stays in the plane its sender put it in). Three hosts send to NIC 0 of host 0 from their rail-1
NICs (so the traffic crosses the aggregation tier); each sender spreads its load evenly over its
two ports (two connections, 5-tuples chosen so the host's own hash puts one on each port), and
the offered load is 80% of the destination NIC. Measured on the destination's two ToR ports:
bytes (load) and bfifo backlog (queue), over several rounds with different 5-tuples.
"""
from __future__ import annotations

from scenarios.base import Result, Scenario, verdict
from scenarios.common import setup_of, valid
from testbed.emulation.build import Emulation, Options
from testbed.emulation.trace import emulation_trace, first_port
from testbed.measure.meters import Sampler, cpu_busy_fraction
from testbed.model import make_fabric
from testbed.workload import collectives as C

LOAD = 0.8            # offered load as a fraction of the destination NIC's two ports
SENDERS = 3


def pick_sport(emu, src, dst, dport: int, start: int, port: str) -> int:
    """The first source port from `start` on that the sending host hashes onto its `port`."""
    sport = start
    while first_port(emu.net, src, dst, "tcp", sport, dport) != port:
        sport += 1
    return sport


class DualPlaneBalance(Scenario):
    name = "dual-plane-balance"
    claim = "C5"
    title = "dual-plane balance on the two ToR ports toward one NIC"
    paper = ("HPN sec. 5, Fig. 13: without dual-plane one of the two ToR ports toward a NIC carried 3x "
             "the load of the other, queues 267 KB vs 3 KB; with dual-plane equal load, average queue "
             "20 KB (-91.8%)")

    def measure(self, quick: bool) -> Result:
        rounds = 3 if quick else 4
        seconds = 3.0 if quick else 5.0
        out, busy, series, setups = {}, [], {}, {}
        for label, dual in (("ecmp", False), ("dual-plane", True)):
            fab = make_fabric("hpn", {"pods": 1, "hosts": 4, "dual_plane": dual})
            with Emulation(fab, Options()) as emu:
                dst = fab.nic("p0s0h0-n0")
                senders = [fab.hosts[h].nics[1] for h in sorted(fab.hosts) if h != dst.host][:SENDERS]
                port_links = [l for l in fab.host_links() if l.a_intf in dst.ports]
                intfs = [l.b_intf for l in sorted(port_links, key=lambda l: l.a_intf)]
                capacity = sum(fab.link_mbit(l) for l in port_links) * 1e6 / 8   # bytes/s
                rate = LOAD * capacity / (2 * len(senders))
                per_round = []
                for r in range(rounds):
                    sends, flows_to = [], [0, 0]
                    for i, src in enumerate(senders):
                        # two connections per sender, one hashed onto each of its ports: the
                        # sender splits its load evenly, as a dual-ported NIC does
                        for j, port in enumerate(src.ports):
                            dport = 7000 + 2 * i + j
                            sport = pick_sport(emu, src, dst, dport, 43000 + 1000 * r + 100 * i + 50 * j, port)
                            sends.append(C.Send(src, dst, int(rate * seconds), (sport,), dport, rate=rate))
                            hops = emulation_trace(emu, src, dst, sport=sport, dport=dport)
                            last = next(k for k, l in enumerate(sorted(port_links, key=lambda l: l.a_intf))
                                        if l.b == hops[-1].switch)
                            flows_to[last] += 1
                    runner = C.Runner(emu)
                    with Sampler(intfs, interval=0.05) as s:
                        _, b = cpu_busy_fraction(lambda: runner.run_sends(sends))
                    busy.append(b)
                    load = [s.sent(i) for i in intfs]
                    queue = [s.mean_queue(i) for i in intfs]
                    per_round.append({"flows_per_port": flows_to, "bytes": load,
                                      "share": [round(x / sum(load), 3) for x in load],
                                      "max_over_min": round(max(load) / max(min(load), 1), 2),
                                      "mean_queue_kb": [round(q / 1000, 1) for q in queue],
                                      "max_queue_kb": [round(s.max_queue(i) / 1000, 1) for i in intfs],
                                      "cpu_busy": round(b, 3)})
                    if r == 0:
                        for i in intfs:
                            series[f"{label}: queue {i} (KB)"] = [[round(t, 2), q / 1000] for t, _, q in s.series[i]]
                busy_port_q = [max(x["mean_queue_kb"]) for x in per_round]
                out[label] = {"rounds": per_round,
                              "mean_max_over_min": round(sum(x["max_over_min"] for x in per_round) / rounds, 2),
                              "mean_queue_kb": round(sum(sum(x["mean_queue_kb"]) / 2 for x in per_round) / rounds, 2),
                              "busy_port_queue_kb": round(sum(busy_port_q) / rounds, 2)}
                setups[label] = setup_of(emu, offered_load=LOAD, seconds=seconds, rounds=rounds)
        e, d = out["ecmp"], out["dual-plane"]
        reduction = 1 - d["mean_queue_kb"] / e["mean_queue_kb"] if e["mean_queue_kb"] else 0.0
        busy_reduction = 1 - d["busy_port_queue_kb"] / e["busy_port_queue_kb"] if e["busy_port_queue_kb"] else 0.0
        ok = (d["mean_max_over_min"] <= 1.15 and e["mean_max_over_min"] >= 1.3
              and reduction >= 0.4 and busy_reduction >= 0.5)
        measured = (f"without dual-plane: busier/other port load {e['mean_max_over_min']}x on average "
                    f"(flows per port by round {[x['flows_per_port'] for x in e['rounds']]}), mean queue "
                    f"{e['mean_queue_kb']} KB, busier port {e['busy_port_queue_kb']} KB; with dual-plane: "
                    f"{d['mean_max_over_min']}x, mean queue {d['mean_queue_kb']} KB, busier port "
                    f"{d['busy_port_queue_kb']} KB (mean {reduction:.0%} shorter, busier port {busy_reduction:.0%})")
        return Result(
            self.name, self.claim, self.paper,
            expectation=(f"offered load {LOAD:.0%} of the NIC, split evenly by each sender: with dual-plane "
                         "the two ports carry equal load and queues stay short; without it the aggregation "
                         "hash splits a few flows unevenly, the busier port is driven past its rate and "
                         "queues (dual-plane: mean queue at least 40% and the busier port's at least 50% shorter)"),
            measured=measured, verdict=verdict(ok, valid(*busy)),
            figures={**out, "queue_reduction": round(reduction, 3),
                     "busier_port_queue_reduction": round(busy_reduction, 3)},
            setup={"fabrics": setups, "x_label": "time (s)", "y_label": "queue (KB)"},
            series=series)


SCENARIO = DualPlaneBalance
