"""Interface statistics counters (tx_bytes, tx_packets, rx_bytes, ...) from sysfs, queue
backlog (bytes in the link's bfifo) from netlink via pyroute2, and the Sampler that reads both
in a thread (the reading itself is testbed/inhost/ports.py, which a server runs too).

Switch ports are veth ends in the root namespace, so this reads the emulation's switch side on
this machine; `emu.sampler` and `emu.counters` read them wherever they live (cluster_meters.py).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from testbed.inhost.ports import Ports, counter, read  # noqa: F401  (counter, read: re-exported)


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


@dataclass
class Sampler(Ports):
    """Samples port bytes and queue backlog of root-namespace interfaces in a thread.

        with emu.sampler(["p0s0r0t0-eth1", ...], interval=0.05) as s: ...
        s.series["p0s0r0t0-eth1"] -> [(t, tx_bytes, backlog_bytes), ...]

    `counter="rx_bytes"` samples what the switch port received instead: on a host link's switch
    end, that is what the host sent into the fabric. `t` is seconds since `t0` (time.monotonic).
    A fabric across servers samples on each server (RemoteSampler, same series; there each
    sample carries the moment its server's read began, not each interface's).
    """
    intfs: list[str]
    interval: float = 0.05
    series: dict[str, list[tuple[float, int, int]]] = field(default_factory=dict)
    counter: str = "tx_bytes"
    queues: bool = True            # also read each qdisc's backlog (a netlink dump per interface)

    def __enter__(self) -> Sampler:
        self.open()
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
                sample = self.read()
            except Exception:   # the interfaces went away under us (a teardown): stop sampling
                return
            self.add(t, sample, time.monotonic() - self._t0 - t)
            self._stop.wait(self.interval)

    def add(self, t: float, sample: dict, spread: float = 0.0) -> None:
        """One sample begun at `t` that took `spread` s to read: each interface gets the moment
        of its own read, in read order (thousands of ports take a while, more on a busy CPU, and
        a rate over a window must not take the read's length for traffic)."""
        n = len(sample)
        for k, (intf, (value, queued)) in enumerate(sample.items()):
            self.series[intf].append((round(t + spread * (k + 0.5) / n, 4), value, queued))

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.close()

    def sent(self, intf: str) -> int:
        s = self.series[intf]
        return s[-1][1] - s[0][1] if s else 0

    def mean_queue(self, intf: str, start: float = 0.0) -> float:
        """Mean backlog (bytes) from `start` s on (e.g. past slow start)."""
        s = [q for t, _, q in self.series[intf] if t >= start]
        return sum(s) / len(s) if s else 0.0

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
