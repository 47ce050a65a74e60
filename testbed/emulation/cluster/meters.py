"""Meters of a fabric across servers: each server samples its own switch ports
(testbed/inhost/portstream.py over the shared ssh connection) and this machine merges the
streams into the series a local Sampler would give."""
from __future__ import annotations

import json
import shlex
import subprocess
import threading
import time

from testbed.core.errors import TestbedError
from testbed.emulation.cluster.parts import Server, python_module
from testbed.emulation.net.counters import Sampler


class RemoteSampler(Sampler):
    """Sampler over interfaces on several servers: `placement` maps each server to its share.
    Each server ticks on its own; summed rate series line up by sample index (one interval)."""

    def __init__(self, placement: dict[Server, list[str]], interval: float = 0.05, counter: str = "tx_bytes",
                 queues: bool = True):
        super().__init__([i for intfs in placement.values() for i in intfs], interval, counter=counter,
                         queues=queues)
        self.placement = placement

    def __enter__(self) -> RemoteSampler:
        self.series = {i: [] for i in self.intfs}
        self._t0 = self.t0 = time.monotonic()
        self._procs, self._threads = [], []
        options = (f"--interval {self.interval} --counter {self.counter}"
                   + (" --queues" if self.queues else ""))
        for server, intfs in self.placement.items():
            command = f"{python_module('testbed.inhost.portstream')} {options}"
            proc = subprocess.Popen(server.ssh("bash", "-c", shlex.quote(command)),
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
            proc.stdin.write(json.dumps(intfs) + "\n")
            proc.stdin.flush()
            self._procs.append(proc)
            thread = threading.Thread(target=self._follow, args=(proc,), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def _follow(self, proc: subprocess.Popen) -> None:
        """A server's samples, on this machine's clock: its first sample is taken as received."""
        offset = None
        for line in proc.stdout:
            row = json.loads(line)
            if offset is None:
                offset = time.monotonic() - self._t0 - row["t"]
            self.add(round(row["t"] + offset, 4), row["v"])

    def __exit__(self, *exc) -> None:
        errors = []
        for proc in self._procs:
            try:
                proc.stdin.close()     # portstream stops at the end of its input
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.returncode:
                errors.append(proc.stderr.read()[-500:])
        for thread in self._threads:
            thread.join(timeout=5)
        if errors and exc == (None, None, None):
            raise TestbedError("a server's port sampler failed: " + " | ".join(errors))


def read_counters(placement: dict[Server, list[str]], names: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """Each interface's statistics counters `names`, read on its server (one ssh per server)."""
    out = {}
    for server, intfs in placement.items():
        script = "cd /sys/class/net\nwhile read -r i; do echo $i " + " ".join(
            f"$(cat $i/statistics/{n})" for n in names) + "; done"
        for line in server.run(script, input="".join(f"{i}\n" for i in intfs)).splitlines():
            intf, *values = line.split()
            out[intf] = tuple(int(v) for v in values)
    return out
