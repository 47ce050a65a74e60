"""Measurement: per-port bytes and rates, queue length, failover gaps, CPU headroom.

Port counters and queue backlogs are sampled by testbed.emulation.net.counters (Sampler, through
`emu.sampler`: it knows where the ports live); this module adds what is computed from them.
"""
from __future__ import annotations

import bisect
import re
import signal
import threading
import time
from dataclasses import dataclass

from testbed.core import cpuwindow
from testbed.core.cpuwindow import cpu_times  # noqa: F401  (re-exported)
from testbed.core.errors import TestbedError
from testbed.core.wait import wait_for
from testbed.emulation.build import Emulation
from testbed.emulation.net.counters import Sampler, counter, rates, summed_rates  # noqa: F401  (re-exported)
from testbed.measure import waitlog
from testbed.model.fabric import Nic


def port_bytes(emu: Emulation, intfs: list[str]) -> dict[str, int]:
    """Bytes sent so far by each switch-side interface (a switch port's egress)."""
    return {i: n for i, (n,) in emu.counters(intfs).items()}


def iperf_intervals(result: dict, offset: float = 0.0) -> dict:
    """Throughput time series from iperf3's JSON (-J with -i): what the sender wrote per interval.

    Returns {"sum": [(t_end, mbps), ...], "streams": {socket: [(t_end, mbps), ...]}}, t shifted by
    `offset` (e.g. when the client started, relative to a Sampler's t0).
    """
    out = {"sum": [], "streams": {}}
    for interval in result.get("intervals", []):
        total = interval.get("sum", {})
        if total:
            out["sum"].append((round(offset + total["end"], 3), total["bits_per_second"] / 1e6))
        for st in interval.get("streams", []):
            out["streams"].setdefault(st["socket"], []).append(
                (round(offset + st["end"], 3), st["bits_per_second"] / 1e6))
    return out


def longest_stall(series: list[tuple[float, float]], threshold: float) -> float:
    """Longest stretch (s) of a rate series below `threshold`: consecutive samples, end times."""
    longest, start, prev_t = 0.0, None, None
    for t, v in series:
        if v < threshold:
            if start is None:
                start = prev_t if prev_t is not None else t
            longest = max(longest, t - start)
        else:
            start = None
        prev_t = t
    return longest


def imbalance(loads: list[float]) -> dict[str, float]:
    """Load imbalance across uplinks: max/min and coefficient of variation."""
    if not loads:
        return {"max_over_min": 0.0, "cv": 0.0}
    mean = sum(loads) / len(loads)
    var = sum((x - mean) ** 2 for x in loads) / len(loads)
    return {"max_over_min": max(loads) / min(loads) if min(loads) > 0 else float("inf"),
            "cv": (var ** 0.5) / mean if mean else 0.0}


@dataclass
class GapResult:
    sent: int
    received: int
    longest_gap_ms: float

    @property
    def lost(self) -> int:
        return self.sent - self.received


def ping_probe_command(src: Nic, dst: Nic, count: int, interval_s: float) -> str:
    return f"ping -n -D -i {interval_s} -c {count} -W 1 -I {src.ip} {dst.ip}"


def parse_gaps(output: str, interval_s: float) -> GapResult:
    """Longest silence between consecutive replies (from ping -D timestamps) and losses."""
    stamps = [float(m) for m in re.findall(r"^\[(\d+\.\d+)\] \d+ bytes from", output, re.M)]
    m = re.search(r"(\d+) packets transmitted, (\d+) received", output)
    if not m:
        raise TestbedError(f"no ping summary in:\n{output[-500:]}")
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    longest = max(gaps, default=0.0)
    return GapResult(int(m.group(1)), int(m.group(2)), round(max(longest - interval_s, 0) * 1000, 1))


def finish_ping(proc, what: str, timeout: float, grace: float = 5.0) -> None:
    """Wait up to `timeout` for a probe's ping to end; one still sending then (a CPU-starved ping
    falls behind its count) is interrupted, and prints its summary of what it did send, as ping
    does on SIGINT. Raises naming `what` only if it does not end even then."""
    try:
        wait_for(f"{what} to finish", lambda: proc.poll() is not None, timeout, 0.05)
    except TestbedError:
        proc.send_signal(signal.SIGINT)
        wait_for(f"{what} to finish after SIGINT", lambda: proc.poll() is not None, grace, 0.05)


class GapProbe:
    """1 ms ICMP probes from `src` to `dst` in the background; `result()` after `stop`.

    The gap is the longest silence between replies minus the probe interval: how long the path
    was dead as seen from the host.
    """

    def __init__(self, emu: Emulation, src: Nic, dst: Nic, seconds: float, interval_s: float = 0.001):
        self.emu, self.src, self.interval = emu, src, interval_s
        self.out = emu.state.output(f"probe-{src.ip}-{dst.ip}.txt")
        count = int(seconds / interval_s)
        self.proc = emu.net[src.host].spawn(ping_probe_command(src, dst, count, interval_s),
                                            "ping", out=self.out)

    def wait(self, timeout: float) -> GapResult:
        finish_ping(self.proc, "the probe", timeout)
        text = self.out.read_text(errors="replace")
        self.emu.state.done_with(self.out)
        return parse_gaps(text, self.interval)


def cpu_busy_fraction(seconds_fn) -> tuple[object, float]:
    """Run `seconds_fn()` and return (its result, fraction of all CPUs busy meanwhile).

    A run during which the CPUs were nearly saturated measured the emulator, not the fabric
    (Handigol et al., CoNEXT 2012): callers mark such runs invalid. Where the run's traffic
    opened windows around its moving part (testbed.core.cpuwindow), the fraction is over those
    windows: the senders' start-up before "go" is not time any timing covers. The emulator's
    own waiting over the same windows is logged meanwhile (testbed/measure/waitlog.py).
    """
    whole0, window0 = cpu_times(), cpuwindow.inside()
    with waitlog.run():
        result = seconds_fn()
    whole1, window1 = cpu_times(), cpuwindow.inside()
    total, idle = window1[0] - window0[0], window1[1] - window0[1]
    if total <= 0:
        total, idle = whole1[0] - whole0[0], whole1[1] - whole0[1]
    busy = 1 - idle / max(total, 1)
    return result, busy


class CpuMeter:
    """The CPU's busy fraction sampled every `interval` s in a thread, so that it can be read
    afterwards over chosen windows (a training step's: the windows its bytes moved in)."""

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
            self.samples.append((time.monotonic(), *cpu_times()))
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
