"""The controller of one run: an os-ken process (controller/launcher.py) and the files it owns.

The spec it reads (family, parameters, routing options), the status it writes (switches
connected, NIC ports learned, routes per switch) and its log all live in the run directory;
nothing else reads or writes them. The process is recorded in the run state before it is used.

It serves OpenFlow on a Unix socket in a root-only directory of the run under Open vSwitch's
run directory (the one place ovs-vswitchd connects `unix:` targets to), not on a TCP port:
a local user cannot connect to it, let alone pose as one of the fabric's switches.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from testbed.core.errors import TestbedError
from testbed.core.wait import wait_for
from testbed.emulation import system

PROJECT = Path(__file__).resolve().parents[2]
MARKER = "controller.launcher"


class ControllerProcess:
    def __init__(self, state, fabric, routing: dict):
        self.state, self.fabric, self.routing = state, fabric, routing
        self.proc: subprocess.Popen | None = None
        self.socket_dir = Path(system.ovs_rundir()) / f"hpn-testbed-{state.run_id}"
        self.socket = self.socket_dir / "of.sock"
        self.spec_file = state.file("spec.json")
        self.status_file = state.file("status.json")
        self.log_file = state.file("controller.log")
        self.sightings_file = state.file("sightings.jsonl")   # wiring probes' postcards

    def start(self) -> None:
        self.state.add("dirs", str(self.socket_dir))    # before it exists: `clean` removes it
        self.socket_dir.mkdir(mode=0o700)
        self.spec_file.write_text(json.dumps({
            "family": self.fabric.family, "params": asdict(self.fabric.params),
            "routing": self.routing, "status": str(self.status_file),
            "sightings": str(self.sightings_file)}))
        env = dict(os.environ, HPN_TESTBED_SPEC=str(self.spec_file),
                   PYTHONPATH=f"{PROJECT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
        with open(self.log_file, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", MARKER, "controller.app", str(self.socket)],
                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=PROJECT, start_new_session=True)
        self.state.add_process(self.proc.pid, MARKER)

    def status(self) -> dict:
        try:
            return json.loads(self.status_file.read_text())
        except (OSError, ValueError):
            return {}

    def sightings(self) -> list[dict]:
        try:
            text = self.sightings_file.read_text()
        except OSError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.endswith("}")]

    def log(self) -> str:
        try:
            return self.log_file.read_text()[-4000:]
        except OSError:
            return ""

    def check_alive(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            raise TestbedError("the controller exited; its log:\n" + self.log())

    def wait(self, condition, what: str, timeout: float) -> None:
        """Poll the status until `condition(status)` holds; fail at once if the controller dies."""
        def check():
            self.check_alive()
            return condition(self.status())
        wait_for(what, check, timeout)

    def listening(self) -> bool:
        return self.socket.exists()

    def stop(self) -> None:
        from testbed.emulation.runstate import kill_pid
        if self.proc is not None:
            kill_pid(self.proc.pid, MARKER)
            self.proc.wait(timeout=5)
            self.proc = None
        shutil.rmtree(self.socket_dir, ignore_errors=True)
