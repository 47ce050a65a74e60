"""The controller of one run: an os-ken process (controller/launcher.py) and the files it owns.

The spec it reads (family, parameters, routing options, the file of a policy defined outside the
testbed), the status it writes (testbed/model/contract.py: ControllerStatus) and its log all live in
the run directory; nothing else reads or writes them. The process is recorded in the run state
before it is used.

It serves OpenFlow on a Unix socket in a root-only directory of the run under Open vSwitch's
run directory (the one place ovs-vswitchd connects `unix:` targets to), not on a TCP port:
a local user cannot connect to it, let alone pose as one of the fabric's switches.

Liveness: the controller stamps a heartbeat file every HEARTBEAT_S with the oldest answer of its
apps' event loops to a Beat event (controller/heartbeat.py) and `unresponsive` reads it: a
controller that is stopped (SIGSTOP, state T) with a stale heartbeat is lost within about half a
second, one whose heartbeat is older than FROZEN_AFTER_S (a handler that loops or blocks) is
named as hung. A healthy loop answers a Beat between short handlers, however busy the run (a
burst of packet-ins puts at most os-ken's queue of 128 events ahead of it), and our handlers
that work long on purpose say they progress (heartbeat.working): FROZEN_AFTER_S is well above
what a healthy loop takes on a loaded machine (bench/results/journal.md) and still names a hang
within 2 s (issue 39). Every file goes through testbed/core/files.py.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from testbed.core import files, plugins, progress
from testbed.core.errors import ParamError, TestbedError
from testbed.core.wait import wait_for
from testbed.emulation.net import system
from testbed.model import families, policies
from testbed.model.contract import ControllerStatus

TCP_LISTEN, UDIAG_SHOW_NAME = 10, 0x1    # sock_diag: the listening state, and ask for each path

PROJECT = Path(__file__).resolve().parents[3]
MARKER = "controller.launcher"
HEARTBEAT_S = 0.1          # how often the controller stamps its heartbeat (controller/launcher.py)
STOPPED_AFTER_S = 0.4      # a stale heartbeat of a stopped process (state T): lost
FROZEN_AFTER_S = 1.5       # a stale heartbeat of a running one: hung (see above)


class ControllerProcess:
    """`app`: a user's app (testbed/emulation/control/apps.py) instead of ours or beside it."""

    def __init__(self, state, fabric, routing: dict, app=None):
        self.state, self.fabric, self.routing, self.app = state, fabric, routing, app
        self.proc: subprocess.Popen | None = None
        self.socket_dir = Path(system.ovs_rundir()) / f"hpn-testbed-{state.run_id}"
        self.socket = self.socket_dir / "of.sock"
        self.target = f"unix:{self.socket}"      # where switches connect (ClusterController: TLS)
        self.spec_file = state.file("spec.json")
        self.status_file = state.file("status.json")
        self.log_file = state.file("controller.log")
        self.sightings_file = state.file("sightings.jsonl")   # wiring probes' postcards
        self.heartbeat_file = state.file("heartbeat")

    @progress.phase("controller")
    def start(self) -> None:
        self.state.add("dirs", str(self.socket_dir))    # before it exists: `clean` removes it
        self.socket_dir.mkdir(mode=0o700)
        self.write_spec()
        with open(self.log_file, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", MARKER, self.apps(), str(self.socket)],
                stdout=log, stderr=subprocess.STDOUT, env=self.env(), cwd=PROJECT, start_new_session=True)
        self.state.add_process(self.proc.pid, MARKER)

    @property
    def ours(self) -> bool:
        """Does our app run (alone or with a user's beside it)? Only then is there a status."""
        return self.app is None or self.app.beside

    def apps(self) -> str:
        """The launcher's app list: ours, a user's, or both (comma-separated, as os-ken takes it)."""
        if self.app is None:
            return "controller.app"
        return f"controller.app,{self.app.target}" if self.app.beside else self.app.target

    def env(self) -> dict:
        """The controller's environment: where its spec is, the project importable, and no
        bytecode written (a user's app's directory stays as it was)."""
        return dict(os.environ, HPN_TESTBED_SPEC=str(self.spec_file), PYTHONDONTWRITEBYTECODE="1",
                    PYTHONPATH=f"{PROJECT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")

    @property
    def protocols(self) -> str:
        """The OpenFlow versions the bridges offer: 1.5 for ours, the app's too for a user's."""
        return "OpenFlow15" if self.ours else self.app.bridge_protocols()

    def switches_connected(self, rows) -> int:
        """How many of Open vSwitch's Controller `rows` ([target, is_connected]) are this
        controller's and connected (a foreign app reports no status: the switches' own view)."""
        return sum(1 for target, connected in rows or () if target == self.target and connected is True)

    def write_spec(self) -> None:
        """What the controller reads at its start, written atomically (`trace` reads it too)."""
        files.write_json(self.state.dir, self.spec_file.name, {
            **families.spec_of(self.fabric), "routing": self.routing, "status": str(self.status_file),
            "sightings": str(self.sightings_file), "heartbeat": str(self.heartbeat_file),
            "heartbeat_s": HEARTBEAT_S,
            **self._policy_file(),
            "controller_app": self.app.describe() | {"beside": self.app.beside} | (
                {"file": self.app.target, "sha256": self.app.sha256} if self.app.sha256 else {})
            if self.app else None})

    def _policy_file(self) -> dict:
        """The file of a policy defined outside the testbed and the sha256 of what was checked
        (the controller loads exactly that: testbed/core/plugins.py)."""
        path = policies.source(self.routing.get("policy", ""))
        return {"policy_file": path, **({"policy_sha256": plugins.fingerprint(path)} if path else {})}

    def status(self) -> ControllerStatus:
        """What the controller last reported (written=False before its first write)."""
        try:
            data = files.load_json(self.status_file, "controller status", files.STATE_MAX)
        except ParamError:      # not written yet
            return ControllerStatus(written=False)
        return ControllerStatus.from_json(data)

    def sightings(self) -> list[dict]:
        try:
            text = files.read_text(self.sightings_file, "wiring sightings", files.RESULT_MAX)
        except ParamError:
            return []
        return [files.parse_json(line, "a wiring sighting") for line in text.splitlines()
                if line.endswith("}")]

    def log(self) -> str:
        try:
            return files.read_bytes(self.log_file, "controller log", files.RESULT_MAX)[-4000:].decode(
                errors="replace")
        except ParamError:
            return ""

    def unresponsive(self) -> str | None:
        """Why the running controller no longer answers (stopped or hung), or None."""
        if self.proc is None or self.proc.poll() is not None:
            return None
        try:
            fd = os.open(self.heartbeat_file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                beat = float(os.pread(fd, 64, 0).split()[0])
            finally:
                os.close(fd)
        except (OSError, ValueError, IndexError):
            return None         # no heartbeat yet (starting): the bring-up's own timeouts apply
        age = time.monotonic() - beat
        if age > STOPPED_AFTER_S and _stopped(self.proc.pid):
            return f"the controller is stopped (no heartbeat for {age:.1f} s)"
        if age > FROZEN_AFTER_S:
            return (f"the controller is hung: an app's event loop has answered nothing for {age:.1f} s "
                    "(a handler that loops or blocks)")
        return None

    def check_alive(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            raise TestbedError("the controller exited; its log:\n" + self.log())
        reason = self.unresponsive()
        if reason:
            raise TestbedError(reason)

    def wait(self, condition, what: str, timeout: float) -> None:
        """Poll the status until `condition(status)` holds; fail at once if the controller dies."""
        def check():
            self.check_alive()
            return condition(self.status())
        wait_for(what, check, timeout)

    def listening(self) -> bool:
        """Is the controller accepting on its socket? Asked of the kernel's socket diagnostics
        (pyroute2's sock_diag: the listening Unix sockets and their paths); asking by connecting
        would be a connection the controller has to refuse."""
        from pyroute2.netlink.diag import DiagSocket
        try:
            with DiagSocket() as diag:
                diag.bind()
                found = diag.get_sock_stats(family=socket.AF_UNIX, states=1 << TCP_LISTEN,
                                            show=UDIAG_SHOW_NAME)
        except OSError:
            return False
        return any(s.get_attr("UNIX_DIAG_NAME") == str(self.socket) for s in found)

    def wait_listening(self, timeout: float) -> None:
        """Wait until the switches' first attempt to connect will find the controller: Open
        vSwitch retries a refused one only after a second (its backoff), the longest step of a
        small fabric's bring-up."""
        if self.target.startswith("unix:"):
            wait_for("the controller to listen", lambda: self.check_alive() or self.listening(),
                     timeout, 0.01)

    def stop(self) -> None:
        from testbed.emulation.run.processes import kill_pid
        if self.proc is not None:
            kill_pid(self.proc.pid, MARKER)
            self.proc.wait(timeout=5)
            self.proc = None
        shutil.rmtree(self.socket_dir, ignore_errors=True)


def _stopped(pid: int) -> bool:
    """Is `pid` stopped by a signal (state T in /proc/PID/stat)?"""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read(4096).rsplit(b")", 1)[1].split()[0] == b"T"
    except (OSError, IndexError):
        return False
