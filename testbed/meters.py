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

from testbed.build import Emulation
from testbed.errors import TestbedError
from testbed.topo.model import Nic


def tx_bytes(intf: str) -> int:
    return int(Path(f"/sys/class/net/{intf}/statistics/tx_bytes").read_text())


def port_bytes(intfs: list[str]) -> dict[str, int]:
    """Bytes sent so far by each root-namespace interface (a switch port's egress)."""
    return {i: tx_bytes(i) for i in intfs}


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
    """
    intfs: list[str]
    interval: float = 0.05
    series: dict[str, list[tuple[float, int, int]]] = field(default_factory=dict)

    def __enter__(self) -> "Sampler":
        from pyroute2 import IPRoute
        self._ipr = IPRoute()
        self._index = {i: self._ipr.link_lookup(ifname=i)[0] for i in self.intfs}
        self.series = {i: [] for i in self.intfs}
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            t = time.monotonic() - self._t0
            for intf, index in self._index.items():
                self.series[intf].append((t, tx_bytes(intf), backlog(self._ipr, index)))
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
        self.out = f"/tmp/hpn-{emu.run_id}-probe-{src.ip}-{dst.ip}.txt"
        count = int(seconds / interval_s)
        node = emu.net[src.host]
        self.pid = int(node.cmd(f"{ping_probe_command(src, dst, count, interval_s)} > {self.out} 2>&1 "
                                f"& echo $!").split()[-1])
        emu.state.add("pids", [self.pid, "ping"])

    def wait(self, timeout: float) -> GapResult:
        from testbed.build import wait_for
        node = self.emu.net[self.src.host]
        wait_for("the probe to finish",
                 lambda: not node.cmd(f"kill -0 {self.pid} 2>/dev/null && echo alive").strip(),
                 timeout, 0.05)
        return parse_gaps(node.cmd(f"cat {self.out}; rm -f {self.out}"), self.interval)


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
