"""End-to-end path probing: UDP probes on chosen 5-tuples, every probe once per interval, all from
one process (testbed/inhost/prober.py), and the outages read from the rounds that never came in.

    with ProbeRun(emu, probes, seconds, interval) as run:   # returns once every socket is open
        ...                                                 # inject faults meanwhile
    run.result   # {"names", "rounds", "sent", "received", "late_max_s", "t0"}
    outages(lost_rounds(run.result["received"][i], run.result["rounds"]), misses=2)

A probe on the 5-tuple of a job's flow crosses the links that flow crosses (ECMP hashes the
5-tuple), so probing those 5-tuples probes exactly the paths the job uses (SkeletonHunter's
"skeleton"); probing every NIC pair is the full mesh it is compared with.
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

from testbed.core.errors import TestbedError
from testbed.model.fabric import Nic

MARKER = "testbed.inhost.prober"


@dataclass(frozen=True)
class Probe:
    name: str
    src: Nic
    sport: int
    dst: Nic
    dport: int


def lines(pids: dict[str, int], probes: list[Probe]) -> list[str]:
    """The prober's input: a listener per (destination, port), then the probes."""
    listen = sorted({(p.dst.host, p.dst.ip, p.dport) for p in probes})
    return ([f"listen {pids[h]} {ip} {port}" for h, ip, port in listen]
            + [f"probe {p.name} {pids[p.src.host]} {p.src.ip} {p.sport} {p.dst.ip} {p.dport}"
               for p in probes] + ["go"])


class ProbeRun:
    """The prober running `probes` every `interval` s for `seconds`; `t0` (monotonic) is round 0."""

    def __init__(self, emu, probes: list[Probe], seconds: float, interval: float):
        self.emu, self.probes, self.seconds, self.interval = emu, probes, seconds, interval
        self.proc: subprocess.Popen | None = None
        self.t0 = 0.0
        self.result: dict = {}

    def __enter__(self) -> ProbeRun:
        hosts = {p.src.host for p in self.probes} | {p.dst.host for p in self.probes}
        pids = {h: self.emu.net[h].pid for h in hosts}
        self.proc = subprocess.Popen([sys.executable, "-I", "-m", MARKER, str(self.seconds),
                                      str(self.interval)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.emu.state.add_process(self.proc.pid, MARKER)
        self.proc.stdin.write("\n".join(lines(pids, self.probes)) + "\n")
        self.proc.stdin.close()
        self.proc.stdin = None        # written and closed: communicate() must not flush it
        words = self.proc.stdout.readline().split()
        if words[:1] != ["ready"]:
            self.stop()
            raise TestbedError(f"the prober did not start (exit {self.proc.returncode})")
        self.t0 = float(words[1])
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None:
            self.stop()
            return
        try:
            out, _ = self.proc.communicate(timeout=self.seconds + 30)
        except subprocess.TimeoutExpired:
            self.stop()
            raise TestbedError("the prober did not finish in time") from None
        if self.proc.returncode != 0:
            raise TestbedError(f"the prober failed (exit {self.proc.returncode})")
        self.emu.state.record("prober.json", out)     # its log, for --keep
        self.result = {**json.loads(out.strip().splitlines()[-1]), "t0": self.t0}

    def stop(self) -> None:
        from testbed.emulation.run.runstate import kill_pid
        if self.proc is not None and self.proc.poll() is None:
            kill_pid(self.proc.pid, MARKER)
        if self.proc is not None:
            self.proc.wait()


def lost_rounds(received: list[int], rounds: int) -> list[int]:
    """The rounds of a probe that never came in."""
    got = set(received)
    return [r for r in range(rounds) if r not in got]


def outages(lost: list[int], misses: int) -> list[tuple[int, int]]:
    """The runs of at least `misses` lost rounds in a row, as (first, last) round: what a
    prober that raises an alarm after `misses` lost probes would have raised."""
    out, run = [], []
    for r in sorted(lost) + [None]:
        if run and (r is None or r != run[-1] + 1):
            if len(run) >= misses:
                out.append((run[0], run[-1]))
            run = []
        if r is not None:
            run.append(r)
    return out
