"""The host-side port detectors of a run (claim C4), as a context manager like Faults.

    with Detectors(emu, ["p0s0h0"]) as det:
        ...
        det.events("p0s0h0")

Each host with a dual-ported NIC runs testbed.inhost.detector, which probes the gateway
over every NIC port and takes a silent port out of the NIC's bond. Leaving the block ends
them; each restores every port it took out when it stops.
"""
from __future__ import annotations

import json
import sys

from testbed.core.errors import TestbedError
from testbed.core.lifecycle import Lifecycle
from testbed.core.wait import wait_for
from testbed.emulation.net import hostnet

MARKER = "testbed.inhost.detector"


class Detectors(Lifecycle):
    def __init__(self, emu, hosts=None, interval: float = 0.015, dead_after: float = 0.06):
        """`hosts`: host names (default: every host with a dual-ported NIC); `interval`: seconds
        between probes per port; `dead_after`: the silence that takes a port out of its bond."""
        self.emu, self.interval, self.dead_after = emu, interval, dead_after
        self.hosts = [h.name for h in emu.fabric.hosts.values()
                      if hostnet.detector_specs(h, emu.bond) and (hosts is None or h.name in hosts)]
        self.procs: dict[str, object] = {}

    @property
    def pids(self) -> dict[str, int]:
        return {host: proc.pid for host, proc in self.procs.items()}

    def log(self, host: str):
        return self.emu.state.file(f"detector-{host}.log")

    def start(self) -> None:
        """Start every detector; returns once each has sent its first probes (logged "start")."""
        for name in self.hosts:
            host = self.emu.fabric.hosts[name]
            argv = [sys.executable, "-m", MARKER, "--interval", str(self.interval),
                    "--dead-after", str(self.dead_after), "--log", str(self.log(name)),
                    *[json.dumps(s) for s in hostnet.detector_specs(host, self.emu.bond)]]
            self.procs[name] = self.emu.net[name].spawn(
                argv, MARKER, out=self.emu.state.file(f"detector-{name}.err"))
        for name, proc in self.procs.items():
            wait_for(f"the detector on {name}", lambda name=name, proc=proc: self._started(name, proc), 10)

    def _started(self, name: str, proc) -> bool:
        if proc.poll() is not None:
            raise TestbedError(f"the detector on {name} exited: "
                               + _read(self.emu.state.file(f"detector-{name}.err")))
        return '"start"' in _read(self.log(name))

    def stop(self) -> None:
        for name, proc in self.procs.items():
            self.emu.net[name].stop(proc, MARKER)
        self.procs = {}

    def events(self, host: str) -> list[dict]:
        """The detector's state changes on `host` (JSON lines; t is CLOCK_MONOTONIC)."""
        return [json.loads(l) for l in _read(self.log(host)).splitlines() if l.strip()]


def _read(path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
