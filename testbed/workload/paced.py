"""Paced UDP load from every NIC of a fabric at once: one blaster process for all of them.

At segment scale (1,088 NICs) a TCP connection per port is thousands of connections and
processes on two cores; here every NIC sends one UDP flow per port at a fixed rate from one
process (testbed/inhost/blaster.py). Each flow's source port is chosen so that the host's
kernel puts it on a port of its own: a NIC offers each of its ports a little more than the
port's rate, so the ports run full and a lost port costs its share of the capacity, while the
flows on it move to the NIC's other port as any flow would.
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

from testbed.core.errors import TestbedError
from testbed.emulation.build import Emulation
from testbed.model.fabric import Nic
from testbed.workload.hashports import by_port, sport_ports

MARKER = "testbed.inhost.blaster"
DPORT = 7000
SPORTS = range(20000, 20064)      # source ports tried per NIC until each port has a flow
SIZE = 1400                       # bytes per datagram: well under the 1,500-byte MTU


@dataclass(frozen=True)
class PacedFlow:
    src: Nic
    dst: Nic
    sport: int
    port: str                      # the host port the kernel sends it on
    rate: float                    # bytes/s
    dport: int = DPORT


def one_flow_per_port(emu: Emulation, pairs: list[tuple[Nic, Nic]], rate: float,
                      tries: int = 24) -> list[PacedFlow]:
    """For each (src, dst) NIC pair, one flow for each port of src, at `rate` bytes/s: source
    ports from SPORTS that the src host's routing sends on each port (asked of every host at
    once). A port no tried source port lands on gets no flow (TestbedError)."""
    candidates = list(SPORTS[:tries])
    answers = sport_ports(emu, [(src, dst, "udp", candidates, DPORT) for src, dst in pairs])
    flows = []
    for (src, dst), devs in zip(pairs, answers):
        chosen = by_port(candidates, devs)
        missing = [p for p in src.ports if p not in chosen]
        if missing:
            raise TestbedError(f"no source port in {candidates[0]}-{candidates[-1]} goes out of "
                               f"{', '.join(missing)} toward {dst.ip}")
        flows += [PacedFlow(src, dst, chosen[p][0], p, rate) for p in src.ports]
    return flows


class PacedLoad:
    """The blaster running `flows` for `seconds`: `start()` returns once every socket is open
    (the load starts then); `finish()` waits for it and gives each flow's (sent, dropped).
    count=True: the receivers count each flow's datagrams too, `received` after `finish()`."""

    def __init__(self, emu: Emulation, flows: list[PacedFlow], seconds: float, size: int = SIZE,
                 count: bool = False):
        self.emu, self.flows, self.seconds, self.size, self.count = emu, flows, seconds, size, count
        self.proc: subprocess.Popen | None = None
        self.received: list[int] = []

    def lines(self) -> list[str]:
        pid = {h: self.emu.net[h].pid for h in {f.src.host for f in self.flows}
               | {f.dst.host for f in self.flows}}
        listen = sorted({(f.dst.host, f.dst.ip, f.dport) for f in self.flows})
        count = " count" if self.count else ""
        return ([f"listen {pid[h]} {ip} {port}{count}" for h, ip, port in listen]
                + [f"flow {pid[f.src.host]} {f.src.ip} {f.sport} {f.dst.ip} {f.dport} {f.rate:.1f}"
                   for f in self.flows] + ["go"])

    def start(self) -> PacedLoad:
        self.proc = subprocess.Popen([sys.executable, "-I", "-m", MARKER, str(self.seconds), str(self.size)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.emu.state.add_process(self.proc.pid, MARKER)
        self.proc.stdin.write("\n".join(self.lines()) + "\n")
        self.proc.stdin.close()
        self.proc.stdin = None        # written and closed: communicate() must not flush it
        if self.proc.stdout.readline().strip() != "ready":
            self.proc.wait()
            raise TestbedError(f"the UDP blaster did not start (exit {self.proc.returncode})")
        return self

    def finish(self) -> list[tuple[int, int]]:
        try:
            out, _ = self.proc.communicate(timeout=self.seconds + 30)
        except subprocess.TimeoutExpired:
            self.stop()
            raise TestbedError("the UDP blaster did not finish in time") from None
        if self.proc.returncode != 0:
            raise TestbedError(f"the UDP blaster failed (exit {self.proc.returncode})")
        counts = json.loads(out.strip().splitlines()[-1])
        self.received = counts.get("received", [])
        return list(zip(counts["sent"], counts["dropped"]))

    def stop(self) -> None:
        from testbed.emulation.run.processes import kill_pid
        if self.proc is not None and self.proc.poll() is None:
            kill_pid(self.proc.pid, MARKER)
            self.proc.wait()
