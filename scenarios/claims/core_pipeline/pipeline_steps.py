"""Training steps of core-pipeline's job on a running HPN (needs root): each phase's transfers at
once, the phases in sequence, the step's time the sum of its phases.

A transfer between hosts goes over `channels` TCP connections (NCCL's channels), each message
on the connection with the least bytes queued (as the dual-ported NICs' connections of HPN's
hosts spread a transfer, sec. 5): a transfer uses every path its connections hash onto, so a
phase lasts about as long as its busiest resource needs (the fluid model of pipeline_job).
Each connection is paced at its share of PACE x the NIC's rate: HPN's RoCE fabric is lossless,
and unpaced TCP overflowing the ToRs' queues made single in-pod phases vary severalfold (C8).
Each connection's source port is chosen so that a NIC's connections are split evenly over its
two ports (the kernel's multipath hash: testbed/workload/hashports.py).
"""
from __future__ import annotations

import time

from scenarios.claims.core_pipeline import pipeline_job as job
from testbed.measure import waitlog
from testbed.measure.meters import CpuMeter
from testbed.workload.collectives import Runner, Send
from testbed.workload.hashports import in_turns, sport_ports

MESSAGE = 16384           # bytes per message a transfer hands to one of its connections
SPORTS = (10000, 29000)   # source ports (below the kernel's ephemeral range)
DPORTS = (30000, 32000)   # server ports, one per transfer: no 4-tuple is ever reused


class StepRunner:
    def __init__(self, emu, channels: int, pace: float = job.PACE, timeout: float = 180.0):
        self.emu, self.channels, self.pace = emu, channels, pace
        self.runner = Runner(emu, timeout)
        self.sport, self.dport = SPORTS[0], DPORTS[0]

    def _next_dport(self) -> int:
        self.dport = self.dport + 1 if self.dport < DPORTS[1] else DPORTS[0]
        return self.dport

    def _candidates(self, n: int) -> list[int]:
        if self.sport + n > SPORTS[1]:
            self.sport = SPORTS[0]
        first, self.sport = self.sport, self.sport + n
        return list(range(first, first + n))

    def balanced_sports(self, plans: list[tuple]) -> list[tuple[int, ...]]:
        """For each (transfer, dport, candidate sports): `channels` of the candidates, as many on
        each of the source NIC's ports as the kernel's hash allows."""
        answers = sport_ports(self.emu, [(t.src, t.dst, "tcp", cands, dport) for t, dport, cands in plans])
        return [in_turns(cands, devs, t.src.ports, self.channels)
                for (t, _dport, cands), devs in zip(plans, answers)]

    def sends(self, transfers) -> list[Send]:
        """The Sends of one phase: relays over one connection, fabric transfers over `channels`."""
        plans = [(t, self._next_dport(), self._candidates(4 * self.channels)) for t in transfers
                 if not t.relay]
        out = [Send(t.src, t.dst, t.nbytes, (0,), self._next_dport(), phase=t.phase)
               for t in transfers if t.relay]
        for (t, dport, _), sports in zip(plans, self.balanced_sports(plans) if plans else []):
            message = max(1, min(MESSAGE, -(-t.nbytes // len(sports))))
            rate = self.pace * self.emu.fabric.line_mbit(t.src) * 1e6 / 8 / len(sports)
            out.append(Send(t.src, t.dst, t.nbytes, sports, dport, message, "least-queued", t.phase, rate))
        return out

    def step(self, placement: str, sizes: job.Sizes, cpu: CpuMeter) -> tuple[list[float], float]:
        """One step of the job placed as `placement`: each phase's seconds (job.PHASES), and the
        CPU busy fraction while its bytes moved (the agents' start-up between phases left out).
        The step is one run of the emulator's waiting (waitlog.run: over the same windows)."""
        seconds, windows = [], []
        with waitlog.run():
            for transfers in job.step(self.emu.fabric, placement, sizes):
                elapsed = 0.0
                if transfers:
                    elapsed, _results = self.runner.run_sends(self.sends(transfers))
                    end = time.monotonic()
                    windows.append((end - elapsed, end))
                seconds.append(elapsed)
        return seconds, cpu.busy(windows)
