"""Measurement: per-port bytes and rates, queue length, failover gaps, CPU headroom.

Switch ports are veth ends in the root namespace, so their counters and qdiscs are read there:
bytes from sysfs, queue backlog (bytes in the link's bfifo) from netlink via pyroute2.
"""
from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from testbed.core.errors import TestbedError
from testbed.core.wait import wait_for
from testbed.emulation import counters
from testbed.emulation.build import Emulation
from testbed.model.fabric import Nic


def tx_bytes(intf: str) -> int:
    return counter(intf, "tx_bytes")


def counter(intf: str, name: str) -> int:
    """A root-namespace interface's statistics counter (tx_bytes, rx_bytes, rx_packets, ...)."""
    return counters.read([intf], (name,))[intf][0]


def port_bytes(intfs: list[str]) -> dict[str, int]:
    """Bytes sent so far by each root-namespace interface (a switch port's egress)."""
    return {i: n for i, (n,) in counters.read(intfs).items()}


def backlog(ipr, index: int) -> int:
    """Bytes queued in the bfifo under an interface's HTB class (0 if none)."""
    total = 0
    for q in ipr.get_qdiscs(index=index):
        if q.get_attr("TCA_KIND") == "bfifo":
            stats = q.get_attr("TCA_STATS2")
            queue = stats.get_attr("TCA_STATS_QUEUE") if stats else None
            total += queue["backlog"] if queue else 0
    return total


@dataclass
class Sampler:
    """Samples port bytes and queue backlog of root-namespace interfaces in a thread.

        with Sampler(["p0s0r0t0-eth1", ...], interval=0.05) as s: ...
        s.series["p0s0r0t0-eth1"] -> [(t, tx_bytes, backlog_bytes), ...]

    `counter="rx_bytes"` samples what the switch port received instead: on a host link's switch
    end, that is what the host sent into the fabric. `t` is seconds since `t0` (time.monotonic).
    """
    intfs: list[str]
    interval: float = 0.05
    series: dict[str, list[tuple[float, int, int]]] = field(default_factory=dict)
    counter: str = "tx_bytes"
    queues: bool = True            # also read each qdisc's backlog (a netlink dump per interface)

    def __enter__(self) -> "Sampler":
        from pyroute2 import IPRoute
        self._ipr = IPRoute()
        self._index = {i: self._ipr.link_lookup(ifname=i)[0] for i in self.intfs}
        self.series = {i: [] for i in self.intfs}
        self._stop = threading.Event()
        self._t0 = self.t0 = time.monotonic()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            t = time.monotonic() - self._t0
            try:
                for intf, index in self._index.items():
                    self.series[intf].append((t, counter(intf, self.counter),
                                              backlog(self._ipr, index) if self.queues else 0))
            except Exception:   # the interfaces went away under us (a teardown): stop sampling
                return
            self._stop.wait(self.interval)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._ipr.close()

    def sent(self, intf: str) -> int:
        s = self.series[intf]
        return s[-1][1] - s[0][1] if s else 0

    def mean_queue(self, intf: str) -> float:
        s = self.series[intf]
        return sum(q for _, _, q in s) / len(s) if s else 0.0

    def max_queue(self, intf: str) -> int:
        return max((q for _, _, q in self.series[intf]), default=0)

    def rate_series(self, intfs: list[str]) -> list[tuple[float, float]]:
        """Summed rate of `intfs` in Mbit/s between consecutive samples: [(t at the end, mbps)]."""
        return summed_rates([rates(self.series[i]) for i in intfs])

    def mean_rate(self, intfs: list[str], start: float, end: float) -> float:
        """Mean summed rate of `intfs` in Mbit/s over [start, end] (seconds since t0)."""
        total = 0.0
        for i in intfs:
            inside = [(t, b) for t, b, _ in self.series[i] if start <= t <= end]
            if len(inside) >= 2:
                total += (inside[-1][1] - inside[0][1]) * 8 / 1e6 / (inside[-1][0] - inside[0][0])
        return total


def rates(samples) -> list[tuple[float, float]]:
    """[(t, bytes, ...)] counter samples -> [(t, Mbit/s since the previous sample)]."""
    return [(round(b[0], 3), (b[1] - a[1]) * 8 / 1e6 / (b[0] - a[0]))
            for a, b in zip(samples, samples[1:]) if b[0] > a[0]]


def summed_rates(series: list[list[tuple[float, float]]]) -> list[tuple[float, float]]:
    """Add rate series sampled together (same sampler) point by point."""
    if not series:
        return []
    n = min(len(s) for s in series)
    return [(series[0][k][0], sum(s[k][1] for s in series)) for k in range(n)]


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


class GapProbe:
    """1 ms ICMP probes from `src` to `dst` in the background; `result()` after `stop`.

    The gap is the longest silence between replies minus the probe interval: how long the path
    was dead as seen from the host.
    """

    def __init__(self, emu: Emulation, src: Nic, dst: Nic, seconds: float, interval_s: float = 0.001):
        self.emu, self.src, self.interval = emu, src, interval_s
        self.out = emu.state.file(f"probe-{src.ip}-{dst.ip}.txt")
        count = int(seconds / interval_s)
        self.proc = emu.net[src.host].spawn(ping_probe_command(src, dst, count, interval_s),
                                            "ping", out=self.out)

    def wait(self, timeout: float) -> GapResult:
        wait_for("the probe to finish", lambda: self.proc.poll() is not None, timeout, 0.05)
        text = self.out.read_text(errors="replace")
        self.out.unlink()
        return parse_gaps(text, self.interval)


def cpu_busy_fraction(seconds_fn) -> tuple[object, float]:
    """Run `seconds_fn()` and return (its result, fraction of all CPUs busy meanwhile).

    A run during which the CPUs were nearly saturated measured the emulator, not the fabric
    (Handigol et al., CoNEXT 2012): callers mark such runs invalid.
    """
    def snapshot():
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = fields[3] + fields[4]
        return sum(fields), idle
    total0, idle0 = snapshot()
    result = seconds_fn()
    total1, idle1 = snapshot()
    busy = 1 - (idle1 - idle0) / max(total1 - total0, 1)
    return result, busy
