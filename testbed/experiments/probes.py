"""The probes of an experiment: RTT (a ping every 0.1 s) and failover gaps (a ping every 1 ms,
testbed.measure.meters.GapProbe) between NIC pairs, for as long as the timed parts of the file
last. `rtt_samples` is pure (unit-tested); the probes need a running emulation."""
from __future__ import annotations

import re
import time

from testbed.measure.meters import GapProbe, finish_ping

RTT_INTERVAL = 0.1
GAP_INTERVAL = 0.001
REPLY = re.compile(r"^\[(\d+\.\d+)\] \d+ bytes from .* time=([\d.]+) ms", re.MULTILINE)


def rtt_samples(output: str, wall_start: float) -> list[list[float]]:
    """[[t, ms], ...] of every reply in `ping -D` output, t in seconds since `wall_start`."""
    return [[round(float(ts) - wall_start, 3), float(ms)] for ts, ms in REPLY.findall(output)]


class RttProbe:
    """Pings from `src` to `dst` every 0.1 s for `seconds`, in the background."""

    def __init__(self, emu, src, dst, seconds: float):
        self.emu = emu
        self.out = emu.state.output(f"rtt-{src.ip}-{dst.ip}.txt")
        count = max(int(seconds / RTT_INTERVAL), 1)
        self.proc = emu.net[src.host].spawn(
            f"ping -n -D -i {RTT_INTERVAL} -c {count} -W 1 -I {src.ip} {dst.ip}", "ping", out=self.out)

    def wait(self, timeout: float, wall_start: float) -> list[list[float]]:
        finish_ping(self.proc, "the RTT probe", timeout)
        text = self.out.read_text(errors="replace")
        self.emu.state.done_with(self.out)
        return rtt_samples(text, wall_start)


class Probes:
    """Every RTT and gap probe of a spec, started together (`start`) and read together (`read`)."""

    def __init__(self, emu, spec):
        self.emu, self.spec = emu, spec
        self.rtt, self.gaps, self.wall_start = {}, {}, 0.0

    def start(self) -> None:
        """At the experiment's t = 0: each probe covers the timed parts of the file."""
        fab, seconds = self.emu.fabric, self.spec.planned
        self.wall_start = time.time()
        for src, dst in self.spec.rtt:
            self.rtt[f"{src} -> {dst}"] = RttProbe(self.emu, fab.nic(src), fab.nic(dst), seconds)
        for src, dst in self.spec.gaps:
            self.gaps[f"{src} -> {dst}"] = GapProbe(self.emu, fab.nic(src), fab.nic(dst), seconds,
                                                    GAP_INTERVAL)

    def read(self, elapsed: float) -> tuple[dict, dict]:
        """({pair: RTT samples}, {pair: gap figures}) once the probes end."""
        timeout = max(self.spec.planned - elapsed, 0.0) + 10
        rtt = {pair: p.wait(timeout, self.wall_start) for pair, p in self.rtt.items()}
        gaps = {}
        for pair, probe in self.gaps.items():
            result = probe.wait(timeout)
            gaps[pair] = {"longest_gap_ms": result.longest_gap_ms, "sent": result.sent,
                          "received": result.received}
        return rtt, gaps
