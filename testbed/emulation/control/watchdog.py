"""A running fabric's watchdog: notices a lost part within a second and says so.

Every POLL_S it checks that Open vSwitch's daemons recorded at the run's start still run (by PID and
start time, testbed/emulation/net/ovsdaemons.py: a killed ovs-vswitchd or ovsdb-server is named at
once, before the controller or a switch notices anything), that the controller process still runs,
that it still answers (its heartbeat, testbed/emulation/control/controller.py: a stopped controller
is noticed within about half a second, a hung one within FROZEN_AFTER_S) and that the controller has
not seen a switch disconnect; every SWITCH_POLL_S it also asks Open vSwitch whether each bridge of
the run is still connected (the switches' own view, which does not depend on the controller
noticing; OVS updates it in its database every few seconds, so it is the slower backstop: a bridge
counts as lost once it was seen connected and then not, in two answers in a row, so one odd answer
of a busy database ends no run). The first loss is kept in `lost` and, where the run's owner took
the signal handlers (testbed.core.interrupts), raised in the main thread as PartLost, so `up` tears
down with a non-zero exit and a scenario reports `invalid`.

Meanwhile the switches keep the rules they hold (fail mode secure: no standalone learning switch
takes over), so traffic on settled paths goes on, but nothing reacts to failures beyond the groups'
own port liveness.
"""
from __future__ import annotations

import json
import subprocess
import threading
import time

from testbed.core import interrupts, sh
from testbed.core.errors import TestbedError
from testbed.emulation.net import ovsdaemons

POLL_S = 0.1
SWITCH_POLL_S = 0.5


class Watchdog:
    """`daemons`: Open vSwitch's daemons the run depends on (ovsdaemons.record), or None where
    they are not this machine's."""

    def __init__(self, controller, bridges: list[str], target: str, daemons: dict | None = None):
        self.controller, self.bridges, self.target = controller, set(bridges), target
        self.daemons = daemons or {}
        self.lost: str | None = None
        self.seen_connected = 0
        self._suspect: str | None = None      # what the last answer of Open vSwitch said was lost
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="hpn-watchdog", daemon=True)

    def start(self) -> Watchdog:
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._lock:        # after this no interrupt can be sent
            self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        next_switch_poll = 0.0
        while not self._stop.wait(POLL_S):
            reason = ovsdaemons.lost(self.daemons) or self._controller_gone()
            if reason is None and time.monotonic() >= next_switch_poll:
                next_switch_poll = time.monotonic() + SWITCH_POLL_S
                reason = self._switches_gone()
            if reason is not None:
                self._report(reason)
                return

    def _controller_gone(self) -> str | None:
        proc = self.controller.proc
        if proc is None or proc.poll() is not None:
            return f"the controller exited (status {proc.returncode if proc else '?'})"
        frozen = self.controller.unresponsive()
        if frozen:
            return frozen
        lost = self.controller.status().lost
        if lost:
            return f"switch {lost[0]} lost its connection to the controller"
        return None

    def controller_rows(self) -> list | None:
        """Open vSwitch's Controller rows [target, is_connected]; None if it did not answer."""
        try:
            out = sh.run(["ovs-vsctl", "--timeout=5", "--format=json", "--columns=target,is_connected",
                          "list", "Controller"], timeout=10)
            return json.loads(out)["data"]
        except (TestbedError, ValueError, KeyError, subprocess.TimeoutExpired):
            return None    # OVS did not answer in time (a busy machine): no news, not a loss

    def _switches_gone(self) -> str | None:
        """Bridges of the run that Open vSwitch reports disconnected after being connected, in
        two answers in a row."""
        rows = self.controller_rows()
        if rows is None:
            return None
        seen = self._switches_lost(rows)
        confirmed = seen is not None and seen == self._suspect
        self._suspect = seen
        return seen if confirmed else None

    def _switches_lost(self, rows: list) -> str | None:
        ours = [row for row in rows if row[0] == self.target]
        connected = sum(1 for row in ours if row[1] is True)
        if len(ours) < len(self.bridges):
            return f"{len(self.bridges) - len(ours)} switches of the run lost their controller entry"
        if connected < self.seen_connected:
            return f"{self.seen_connected - connected} switches report their controller connection down"
        self.seen_connected = connected
        return None

    def _report(self, reason: str) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            self.lost = reason
            if interrupts.installed():
                interrupts.interrupt_main(reason)
