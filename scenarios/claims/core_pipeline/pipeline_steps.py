"""Training steps of core-pipeline's job on a running HPN (needs root): each phase's transfers at
once, the phases in sequence, the step's time the sum of its phases.

A transfer between hosts goes over `channels` TCP connections (NCCL's channels), each message
on the connection with the least bytes queued (as the dual-ported NICs' connections of HPN's
hosts spread a transfer, sec. 5): a transfer uses every path its connections hash onto, so a
phase lasts about as long as its busiest resource needs (the fluid model of pipeline_job).
Each connection is paced at its share of PACE x the NIC's rate: HPN's RoCE fabric is lossless,
and unpaced TCP overflowing the ToRs' queues made single in-pod phases vary by 2-3x here.
Each connection's source port is chosen so that a NIC's connections are split evenly over its
two ports (the kernel's multipath hash, asked with `ip route get`, one batch per host).
"""
from __future__ import annotations

import bisect
import itertools
import json
import threading
import time
from collections import defaultdict
from pathlib import Path

from scenarios.claims.core_pipeline import pipeline_job as job
from testbed.core import sh
from testbed.workload.collectives import Runner, Send

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
        by_host = defaultdict(list)
        for k, (t, dport, cands) in enumerate(plans):
            by_host[t.src.host].append(k)
        hosts = list(by_host)
        scripts = ["ip -j -batch - <<'EOF'\n" + "".join(
            f"route get {plans[k][0].dst.ip} from {plans[k][0].src.ip} ipproto tcp sport {s} dport {plans[k][1]}\n"
            for k in by_host[h] for s in plans[k][2]) + "EOF\n" for h in hosts]
        outputs = sh.nodes_cmd([(self.emu.net[h], s) for h, s in zip(hosts, scripts)])
        devs: dict[int, list] = {}
        for h, out in zip(hosts, outputs):
            answers = [(json.loads(line) or [{}])[0].get("dev") for line in out.splitlines()
                       if line.startswith("[")]
            for k in by_host[h]:
                devs[k], answers = answers[:len(plans[k][2])], answers[len(plans[k][2]):]
        return [pick(cands, devs.get(k, []), t.src.ports, self.channels)
                for k, (t, _dport, cands) in enumerate(plans)]

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
        CPU busy fraction while its bytes moved (the agents' start-up between phases left out)."""
        seconds, windows = [], []
        for transfers in job.step(self.emu.fabric, placement, sizes):
            elapsed = 0.0
            if transfers:
                elapsed, _results = self.runner.run_sends(self.sends(transfers))
                end = time.monotonic()
                windows.append((end - elapsed, end))
            seconds.append(elapsed)
        return seconds, cpu.busy(windows)


class CpuMeter:
    """The CPU's busy fraction sampled every `interval` s in a thread (/proc/stat), so that a
    step's can be read over the windows its bytes moved in."""

    def __init__(self, interval: float = 0.05):
        self.interval, self.samples = interval, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> CpuMeter:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
            self.samples.append((time.monotonic(), sum(fields), fields[3] + fields[4]))
            self._stop.wait(self.interval)

    def busy(self, windows: list[tuple[float, float]]) -> float:
        """Busy fraction over the union of `windows` (monotonic times), from the samples that
        enclose each."""
        times = [s[0] for s in self.samples]
        total = idle = 0
        for start, end in windows:
            a = max(0, bisect.bisect_right(times, start) - 1)
            b = min(len(times) - 1, bisect.bisect_left(times, end))
            if b > a:
                total += self.samples[b][1] - self.samples[a][1]
                idle += self.samples[b][2] - self.samples[a][2]
        return round(1 - idle / total, 3) if total else 0.0


def pick(candidates: list[int], devs: list, ports: tuple[str, ...], want: int) -> tuple[int, ...]:
    """`want` of `candidates`, taken from the NIC's ports in turn (`devs`: the port the kernel
    sends each candidate on; where no port is known, simply the first `want`)."""
    if len(ports) < 2 or len(devs) != len(candidates) or not set(devs) & set(ports):
        return tuple(candidates[:want])
    groups = [[s for s, d in zip(candidates, devs) if d == p] for p in ports]
    turns = [s for row in itertools.zip_longest(*groups) for s in row if s is not None]
    return tuple(sorted(turns[:want]))
