"""Running collectives on an Emulation (needs root).

`run(emu, collectives)` executes collectives on a running Emulation: one TCP connection per
transfer carrying exactly its bytes, phases in sequence, jobs concurrently (one thread per job);
it returns completion times (until the receiver read the last byte) and bandwidths.

Why not iperf3 -n: its client ends the test once it has *written* the last byte, and the server
stops reading and closes its sockets when told so; what was still in socket buffers is never
delivered. Measured here on MPFT with -w 64K: 677-699 KB of 750 KB received per flow, 4.97 MB
of 6 MB of an all-to-all delivered. A collective needs every byte delivered and the time the
last one arrived, so each host runs a small agent (agent.py, plain Python sockets) per phase: it
listens, says "ready", waits for "go", sends its transfers, and a transfer is complete when the
receiver has read every byte (it closes; the sender sees EOF).
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from testbed.core import cpuwindow
from testbed.core.errors import TestbedError
from testbed.inhost.agent import MARKER
from testbed.model.fabric import Nic
from testbed.workload.collectives.patterns import Collective, Transfer, algbw, busbw_factor

SERVER_PORT_BASE = 5301
# An agent starts per host and phase, so its start-up counts. -I: it sees neither PYTHON*
# variables nor the working directory. -S: no site (site-packages' .pth files were ~16 of its
# ~42 ms of CPU a start); the package is taken from where this one was imported.
_ROOT = str(Path(__file__).resolve().parents[3])
AGENT = [sys.executable, "-I", "-S", "-c",
         f"import sys; sys.path.insert(0, {_ROOT!r}); from {MARKER} import main; main()"]


@dataclass
class FlowRecord:
    src: str
    dst: str
    phase: int
    requested: int
    received: int            # bytes the receiver read
    sport: int | None
    dport: int
    relay: bool
    seconds: float           # from "go" until the receiver had read the last byte
    per_conn: list[int] = field(default_factory=list)   # bytes per connection (path selection)


@dataclass
class CollectiveRun:
    job: str
    kind: str
    size: int
    ranks: int
    seconds: float                       # completion time of all phases
    phase_seconds: list[float]
    flows: list[FlowRecord] = field(default_factory=list)

    @property
    def algbw(self) -> float:
        """Bytes per second (nccl-tests' algbw)."""
        return algbw(self.size, self.seconds)

    @property
    def busbw(self) -> float:
        return self.algbw * busbw_factor(self.kind, self.ranks)

    def summary(self) -> dict:
        return {"job": self.job, "kind": self.kind, "size": self.size, "ranks": self.ranks,
                "seconds": round(self.seconds, 3),
                "phase_seconds": [round(s, 3) for s in self.phase_seconds],
                "algbw_mbit": round(self.algbw * 8 / 1e6, 3),
                "busbw_mbit": round(self.busbw * 8 / 1e6, 3)}


@dataclass(frozen=True)
class Send:
    """One logical transfer over one or more connections (several: path selection, pathsel.py)."""
    src: Nic
    dst: Nic
    nbytes: int
    sports: tuple[int, ...] = (0,)       # one connection per source port (0: the kernel picks)
    dport: int | None = None
    message: int = 0                      # bytes per message when spreading over connections
    policy: str = "round-robin"           # or least-queued
    phase: int = 0
    # bytes/s per connection, paced by the kernel (0: as fast as TCP goes)
    rate: float = 0


class SendResult(NamedTuple):
    """How one Send went. A named tuple, so callers that index it (x[2]) keep working."""
    send: Send
    dport: int
    seconds: float           # from "go" until the receiver had read the last byte
    per_conn: list[int]      # bytes sent on each connection
    received: int            # bytes the receiver read


class Runner:
    """Runs collectives on a running Emulation (see `run`)."""

    def __init__(self, emu, timeout: float = 120.0, pace: float = 0):
        self.emu = emu
        self.timeout = timeout
        self.pace = pace   # > 0: pace each connection at this fraction of its NIC's fair share
        self._lock = threading.Lock()
        self._next_port: dict[str, int] = defaultdict(lambda: SERVER_PORT_BASE)

    def _port(self, ip: str) -> int:
        with self._lock:
            port = self._next_port[ip]
            self._next_port[ip] = port + 1 if port < 60000 else SERVER_PORT_BASE
            return port

    def _spawn(self, host: str, spec: dict) -> subprocess.Popen:
        return self.emu.net[host].spawn([*AGENT, json.dumps(spec)], MARKER, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def _specs(self, sends: list[Send]) -> tuple[dict[str, dict], list[int]]:
        """The agent spec of each host taking part, and the server port of each send."""
        per_host: dict[str, dict] = defaultdict(lambda: {"listen": [], "send": [],
                                                         "timeout": self.timeout})
        ports = []
        for i, s in enumerate(sends):
            port = s.dport or self._port(s.dst.ip)
            ports.append(port)
            per_host[s.dst.host]["listen"].append([s.dst.ip, port, len(s.sports), i])
            per_host[s.src.host]["send"].append(
                [i, {"conns": [[s.src.ip, sp or 0, s.dst.ip, port] for sp in s.sports],
                     "bytes": s.nbytes, "message": s.message, "policy": s.policy, "rate": s.rate}])
        return per_host, ports

    def _start(self, per_host: dict[str, dict], agents: dict[str, subprocess.Popen]) -> None:
        """Spawn an agent per host into `agents` and wait until every one listens."""
        for host, spec in per_host.items():
            agents[host] = self._spawn(host, spec)
        for host, proc in agents.items():
            line = proc.stdout.readline()
            if line.strip() != "ready":
                raise TestbedError(f"transfer agent on {host} did not start: "
                                   f"{line}{proc.stderr.read()[-1500:]}")

    def _results(self, agents: dict[str, subprocess.Popen], t_go: float) -> list[dict]:
        """Each agent's result line, once it has finished."""
        outputs = []
        for host, proc in agents.items():
            try:
                text, err = proc.communicate(timeout=max(1.0, t_go + self.timeout + 5 - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise TestbedError(f"transfers did not finish within {self.timeout:.0f} s") from None
            try:
                out = json.loads(text.strip().splitlines()[-1])
            except (ValueError, IndexError):
                raise TestbedError(f"transfer agent on {host} failed: {err[-1500:]}") from None
            if out["err"]:
                raise TestbedError(f"transfer agent on {host}: {out['err'][:3]}")
            outputs.append(out)
        return outputs

    def run_sends(self, sends: list[Send]) -> tuple[float, list[SendResult]]:
        """Run `sends` at once: (seconds until the last finished, a SendResult per send)."""
        if not sends:
            return 0.0, []
        per_host, ports = self._specs(sends)
        agents: dict[str, subprocess.Popen] = {}
        try:
            self._start(per_host, agents)
            with cpuwindow.moving():     # the CPU a verdict's validity reads: from "go" on
                t_go = time.monotonic()
                for proc in agents.values():
                    proc.stdin.write("go\n")
                    proc.stdin.flush()
                outputs = self._results(agents, t_go)
        finally:
            for proc in agents.values():
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
        done = {i: (t1 - t_go, per_conn) for out in outputs for i, _t0, t1, per_conn in out["send"]}
        received = defaultdict(int)
        for out in outputs:
            for i, n, _first, _last in out["recv"]:
                received[i] += n
        if len(done) < len(sends):
            raise TestbedError(f"{len(sends) - len(done)} transfers did not complete")
        elapsed = max(t for t, _ in done.values())
        return elapsed, [SendResult(s, ports[i], done[i][0], done[i][1], received[i])
                         for i, s in enumerate(sends)]

    def fair_rate(self, transfers: list[Transfer], t: Transfer) -> float:
        """Bytes/s for `t` when its NIC's line rate is shared by the NIC's transfers in the phase."""
        sharing = sum(1 for u in transfers if u.src == t.src and u.src.host != u.dst.host)
        return self.pace * self.emu.fabric.line_mbit(t.src) * 1e6 / 8 / max(sharing, 1)

    def run_phase(self, transfers: list[Transfer]) -> tuple[float, list[FlowRecord]]:
        sends = [Send(t.src, t.dst, t.nbytes, (t.sport or 0,), t.dport, phase=t.phase,
                      rate=self.fair_rate(transfers, t) if self.pace else 0) for t in transfers]
        elapsed, results = self.run_sends(sends)
        return elapsed, [FlowRecord(r.send.src.name, r.send.dst.name, r.send.phase, r.send.nbytes,
                                    r.received, r.send.sports[0] or None, r.dport,
                                    r.send.src.host == r.send.dst.host, r.seconds, r.per_conn)
                         for r in results]

    def run_one(self, coll: Collective) -> CollectiveRun:
        phase_seconds, flows = [], []
        for transfers in coll.phases():
            seconds, records = self.run_phase(transfers)
            phase_seconds.append(seconds)
            flows += records
        # completion = the sum of the phases (each from "go" to its last byte read), without
        # the agents' start-up between phases
        return CollectiveRun(coll.job, coll.kind, coll.size, coll.ranks, sum(phase_seconds),
                             phase_seconds, flows)

    def run(self, collectives: list[Collective]) -> list[CollectiveRun]:
        """Each collective (job) in its own thread, all at once; each job's phases in sequence."""
        if len(collectives) == 1:
            return [self.run_one(collectives[0])]
        results: list = [None] * len(collectives)

        def work(i, coll):
            try:
                results[i] = self.run_one(coll)
            except BaseException as e:   # re-raised in the caller's thread
                results[i] = e
        threads = [threading.Thread(target=work, args=(i, c)) for i, c in enumerate(collectives)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        for r in results:
            if isinstance(r, BaseException):
                raise r
        return results


def run(emu, collectives, timeout: float = 120.0, pace: float = 0) -> list[CollectiveRun]:
    """Run one collective or several concurrent ones (jobs) on a running Emulation.

    pace > 0 paces every connection at that fraction of its NIC's fair share of line rate, a
    stand-in for the credit-based flow control of a lossless fabric (InfiniBand, RoCE with PFC):
    without it, TCP's loss recovery under incast dominates completion times at these rates.
    """
    if isinstance(collectives, Collective):
        collectives = [collectives]
    return Runner(emu, timeout, pace).run(list(collectives))


__all__ = ["FlowRecord", "CollectiveRun", "Send", "SendResult", "Runner", "run"]
