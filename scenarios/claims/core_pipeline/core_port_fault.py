"""core-pipeline's fault (claim C8): a steady pipeline stream from pod 0 to pod 1 crosses a core
switch, which sends it out of the port its per-port rule names (j); j's cable goes down mid-run
and comes back. Meanwhile the core's ports toward the destination pod are sampled (bytes out,
every 0.1 s) and the stream's 5-tuple is traced hop by hop from the switches every `every` s.
"""
from __future__ import annotations

import threading
import time

from testbed.core.errors import TestbedError
from testbed.emulation.faults.inject import Faults
from testbed.emulation.trace import emulation_trace
from testbed.model.policies import core_pairing
from testbed.scenario.timeline import Schedule, Timeline
from testbed.workload import traffic

SPORT, DPORT = 47000, 5299
RATE = 0.8      # the stream's rate, of the core link's: below the link, so no queue builds


def core_hop(fab, hops):
    hop = next((h for h in hops if fab.switches[h.switch].role == "core"), None)
    if hop is None:
        raise TestbedError(f"the stream crosses no core switch: {hops}")
    return hop


class Tracer:
    """Traces one 5-tuple in a thread: [(t since t0, the core's out port or None)]."""

    def __init__(self, emu, src, dst, t0: float, every: float):
        self.emu, self.src, self.dst, self.t0, self.every = emu, src, dst, t0, every
        self.samples: list[tuple[float, int | None]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            t = time.monotonic() - self.t0
            try:
                hops = emulation_trace(self.emu, self.src, self.dst, sport=SPORT, dport=DPORT)
                port = core_hop(self.emu.fabric, hops).out_port if hops[-1].out_port else None
            except TestbedError:
                port = None       # dropped before the core, or mid-change
            self.samples.append((round(t, 2), port))
            self._stop.wait(self.every)

    def stop(self) -> list[tuple[float, int | None]]:
        self._stop.set()
        self._thread.join()
        return self.samples


def run(emu, tl: Timeline, every: float = 0.2) -> dict:
    """The fault run: what the core sent on each port toward the destination pod, the traces,
    and when the fault and the repair happened (s since the sampler started)."""
    fab = emu.fabric
    src = fab.hosts["p0s0h0"].nics[0]
    dst = fab.hosts["p1s0h0"].nics[0]
    hop = core_hop(fab, emulation_trace(emu, src, dst, sport=SPORT, dport=DPORT))
    core, j = hop.switch, hop.out_port
    peer = fab.port_peer()
    toward = sorted(p for p, nbr, _ in fab.adjacency()[core] if fab.switches[nbr].pod == 1)
    intfs = {p: f"{core}-eth{p}" for p in toward}
    link = next(l for l in fab.links if l.b == core and l.b_port == j)
    rate = RATE * fab.link_mbit(link)
    seconds = tl.seconds
    flow = traffic.Flow(src, dst, dport=DPORT, sport=SPORT)
    traffic.start_server(emu, dst, DPORT)
    with Faults(emu) as faults, emu.sampler(list(intfs.values()), interval=0.1, queues=False) as sampler:
        client = traffic.start_client(emu, flow, seconds, rate_mbit=round(rate, 3))
        tracer = Tracer(emu, src, dst, sampler.t0, every)
        try:
            schedule = Schedule()
            fault = schedule.fault(tl.fault_at, lambda: faults.link_down(link), tl.fault)
            schedule.play(sampler.t0)
            t_fault, t_repair = fault.injected, fault.repaired
            traffic.wait_client(emu, client, seconds + 20)
        finally:
            traces = tracer.stop()
        t_end = time.monotonic() - sampler.t0
    series = {p: [[round(t, 2), round(v, 3)] for t, v in sampler.rate_series([i])] for p, i in intfs.items()}
    means = {p: {"before": sampler.mean_rate([i], tl.warm, t_fault),
                 "during": sampler.mean_rate([i], t_fault + 0.5, t_repair),
                 "after": sampler.mean_rate([i], t_repair + 0.5, t_end)} for p, i in intfs.items()}
    return {"core": core, "in_port": hop.in_port, "port_j": j,
            "paired_port": core_pairing(fab).get((core, hop.in_port, 1)),
            "ports": {str(p): {"to": peer[(core, p)][0], "intf": intfs[p],
                               **{k: round(v, 3) for k, v in means[p].items()}} for p in toward},
            "stream_mbps": round(rate, 3), "t_fault": round(t_fault, 2), "t_repair": round(t_repair, 2),
            "t_end": round(t_end, 2), "trace": [[t, p] for t, p in traces],
            "series": {str(p): s for p, s in series.items()},
            "flow": f"tcp {src.ip}:{SPORT} -> {dst.ip}:{DPORT} ({src.name} -> {dst.name})"}
