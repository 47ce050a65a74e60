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

from scenarios.base import Judgement, Scenario, verdict
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


def summary(per_round: list[dict]) -> dict:
    """A variant's rounds and their means: load ratio, queue, the busier port's queue."""
    n = len(per_round)
    return {"rounds": per_round,
            "mean_max_over_min": round(sum(x["max_over_min"] for x in per_round) / n, 2),
            "mean_queue_kb": round(sum(sum(x["mean_queue_kb"]) / 2 for x in per_round) / n, 2),
            "busy_port_queue_kb": round(sum(max(x["mean_queue_kb"]) for x in per_round) / n, 2)}


def shorter(queue: float, than: float) -> float:
    """How much shorter `queue` is than `than`, as a fraction of it."""
    return 1 - queue / than if than else 0.0


class Incast:
    """SENDERS rail-1 NICs sending to NIC 0 of host 0, each half on either of its ports."""

    def __init__(self, emu, seconds: float):
        fab = self.fab = emu.fabric
        self.emu, self.seconds = emu, seconds
        self.dst = fab.nic("p0s0h0-n0")
        self.senders = [fab.hosts[h].nics[1] for h in sorted(fab.hosts) if h != self.dst.host][:SENDERS]
        self.port_links = sorted((l for l in fab.host_links() if l.a_intf in self.dst.ports),
                                 key=lambda l: l.a_intf)
        self.intfs = [l.b_intf for l in self.port_links]        # the ToR ends, toward the NIC
        capacity = sum(fab.link_mbit(l) for l in self.port_links) * 1e6 / 8   # bytes/s
        self.rate = LOAD * capacity / (2 * len(self.senders))

    def sends(self, r: int) -> tuple[list, list[int]]:
        """Round r's sends and how many of them arrive over each of the NIC's ports (traced)."""
        sends, flows_to = [], [0, 0]
        for i, src in enumerate(self.senders):
            # two connections per sender, one hashed onto each of its ports: the
            # sender splits its load evenly, as a dual-ported NIC does
            for j, port in enumerate(src.ports):
                dport = 7000 + 2 * i + j
                sport = pick_sport(self.emu, src, self.dst, dport, 43000 + 1000 * r + 100 * i + 50 * j, port)
                sends.append(C.Send(src, self.dst, int(self.rate * self.seconds), (sport,), dport,
                                    rate=self.rate))
                hops = emulation_trace(self.emu, src, self.dst, sport=sport, dport=dport)
                flows_to[next(k for k, l in enumerate(self.port_links) if l.b == hops[-1].switch)] += 1
        return sends, flows_to

    def round(self, r: int) -> tuple[dict, dict]:
        """Run round r: its figures and the queue series of each port."""
        sends, flows_to = self.sends(r)
        runner = C.Runner(self.emu)
        with Sampler(self.intfs, interval=0.05) as s:
            _, busy = cpu_busy_fraction(lambda: runner.run_sends(sends))
        load = [s.sent(i) for i in self.intfs]
        row = {"flows_per_port": flows_to, "bytes": load,
               "share": [round(x / sum(load), 3) for x in load],
               "max_over_min": round(max(load) / max(min(load), 1), 2),
               "mean_queue_kb": [round(s.mean_queue(i) / 1000, 1) for i in self.intfs],
               "max_queue_kb": [round(s.max_queue(i) / 1000, 1) for i in self.intfs],
               "cpu_busy": round(busy, 3)}
        return row, {i: [[round(t, 2), q / 1000] for t, _, q in s.series[i]] for i in self.intfs}


class DualPlaneBalance(Scenario, name="dual-plane-balance", claim="C5", tour=True):
    title = "dual-plane balance on the two ToR ports toward one NIC"
    paper = ("HPN sec. 5, Fig. 13: without dual-plane one of the two ToR ports toward a NIC carried 3x "
             "the load of the other, queues 267 KB vs 3 KB; with dual-plane equal load, average queue "
             "20 KB (-91.8%)")

    def run(self, quick: bool) -> dict:
        rounds, seconds = (3, 3.0) if quick else (4, 5.0)
        figures = {"setup": {"fabrics": {}, "x_label": "time (s)", "y_label": "queue (KB)"}, "series": {}}
        for label, dual in (("ecmp", False), ("dual-plane", True)):
            fab = make_fabric("hpn", {"pods": 1, "hosts": 4, "dual_plane": dual})
            with Emulation(fab, Options()) as emu:
                incast, per_round = Incast(emu, seconds), []
                for r in range(rounds):
                    row, queues = incast.round(r)
                    per_round.append(row)
                    if r == 0:
                        figures["series"].update({f"{label}: queue {i} (KB)": q for i, q in queues.items()})
                figures[label] = summary(per_round)
                figures["setup"]["fabrics"][label] = setup_of(emu, offered_load=LOAD, seconds=seconds,
                                                              rounds=rounds)
        return figures

    def judge(self, figures: dict) -> Judgement:
        e, d = figures["ecmp"], figures["dual-plane"]
        reduction = shorter(d["mean_queue_kb"], e["mean_queue_kb"])
        busy_reduction = shorter(d["busy_port_queue_kb"], e["busy_port_queue_kb"])
        ok = (d["mean_max_over_min"] <= 1.15 and e["mean_max_over_min"] >= 1.3
              and reduction >= 0.4 and busy_reduction >= 0.5)
        busy = [x["cpu_busy"] for v in (e, d) for x in v["rounds"]]
        return Judgement(
            verdict(ok, valid(*busy)),
            expectation=(f"offered load {LOAD:.0%} of the NIC, split evenly by each sender: with "
                         "dual-plane the two ports carry equal load and queues stay short; without it the "
                         "aggregation hash splits a few flows unevenly, the busier port is driven past its "
                         "rate and queues (dual-plane: mean queue at least 40% and the busier port's at "
                         "least 50% shorter)"),
            measured=(f"without dual-plane: busier/other port load {e['mean_max_over_min']}x on average "
                      f"(flows per port by round {[x['flows_per_port'] for x in e['rounds']]}), mean queue "
                      f"{e['mean_queue_kb']} KB, busier port {e['busy_port_queue_kb']} KB; with dual-plane: "
                      f"{d['mean_max_over_min']}x, mean queue {d['mean_queue_kb']} KB, busier port "
                      f"{d['busy_port_queue_kb']} KB (mean {reduction:.0%} shorter, busier port "
                      f"{busy_reduction:.0%})"),
            derived={"queue_reduction": round(reduction, 3),
                     "busier_port_queue_reduction": round(busy_reduction, 3)})
