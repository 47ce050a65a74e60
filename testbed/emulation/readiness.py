"""When a fabric is ready: every switch connected to the controller, every NIC port learned from
its gratuitous ARP, every switch holding the routes the controller sent (read from the switches
themselves); with a user's app alone, every bridge connected. A part of the Emulation (build.py),
which gives it `fabric`, `controller`, `site`, `net`, `options` and `status()`."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from testbed.core import progress
from testbed.core.errors import TestbedError
from testbed.core.wait import wait_for
from testbed.emulation.net import hostnet
from testbed.model.contract import ControllerStatus


class Readiness:
    """Waiting until an Emulation's fabric is ready (wait_ready), and announcing its NICs."""

    def expected_attachments(self) -> int:
        return sum(len(n.ports) for n in self.fabric.nics())

    def announce(self, ports: set[str] | None = None) -> None:
        """Hosts send a gratuitous ARP on each NIC port (or on `ports` only)."""
        self.site.send_frames([line for h in self.fabric.hosts.values()
                               for line in hostnet.garp_lines(h, self.net[h.name].pid, ports)])

    def unlearned_ports(self, status: ControllerStatus) -> set[str]:
        """Host ports whose switch end the controller has not yet learned a NIC on."""
        learned = {at for ats in status.learned.values() for at in ats}
        return {l.a_intf for l in self.fabric.host_links() if (l.b, l.b_port) not in learned}

    def wait_ready(self) -> None:
        timeout = self.options.ready_timeout
        n = len(self.fabric.switches)
        if not self.controller.ours:
            self.wait_foreign_ready(n, timeout)
            return
        with progress.phase(f"switches connecting ({n})"):
            self.controller.wait(lambda s: len(s.connected) == n,
                                 f"all {n} switches to connect to the controller", timeout)
        self.learn_ports(timeout)
        with progress.phase("checking every switch's routes"):   # one found complete is not asked again
            wait_for("every switch to hold its routes", partial(self.routes_installed, set()), timeout, 0.1)

    def wait_foreign_ready(self, n: int, timeout: float) -> None:
        """A user's app alone writes no status: ready once Open vSwitch reports every bridge
        connected to it; then each host port announces itself once (a learning switch learns
        where the NICs are). What the app installs is its own affair (and --check's)."""
        watchdog = self.site.make_watchdog(self.controller)     # only for its view of OVS

        def connected():
            self.controller.check_alive()
            return self.controller.switches_connected(watchdog.controller_rows()) >= n
        with progress.phase(f"switches connecting to {self.controller.app.label} ({n})"):
            wait_for(f"all {n} switches to connect to the controller app", connected, timeout, 0.2)
        self.announce()

    @progress.phase("learning NIC ports")
    def learn_ports(self, timeout: float) -> None:
        """Announce every port; announce again only the ports still unlearned after a second
        in which the controller learned none (while it works through a burst, as a segment's
        2,176 announcements are, more of them would only queue behind the first)."""
        deadline, total = time.monotonic() + timeout, self.expected_attachments()
        missing, again = None, True          # None: every port
        while missing != set():
            if again:
                self.announce(missing)
            try:
                self.controller.wait(lambda s: not self.unlearned_ports(s),
                                     f"the controller to learn all {total} NIC ports", 1.0)
                return
            except TestbedError:
                left = self.unlearned_ports(self.status())
                progress.note(f"{total - len(left)} of {total} learned")
                if time.monotonic() > deadline:
                    raise
                # the first second only tells how many are left; after that, a second in which
                # no port was learned (as many left as a second ago) means announce them again
                again = missing is not None and len(left) >= len(missing)
                missing = left

    def routes_installed(self, confirmed: set[str] | None = None) -> bool:
        """Read the switches themselves: does each hold the routes the controller says it sent?
        Switches in `confirmed` are not asked again; those found complete are added to it."""
        confirmed = set() if confirmed is None else confirmed
        status = self.status()
        if not status.settled:
            return False
        per_switch = status.routes_per_switch
        asked = [sw for sw in self.fabric.switches if sw not in confirmed]
        with ThreadPoolExecutor(max_workers=8) as pool:   # ovs-ofctl waits on OVS, not the CPU
            counts = list(pool.map(self._flow_count, asked))
        for sw, count in zip(asked, counts):
            if count is not None and count >= per_switch.get(sw, 0) + 1:   # + the ARP-to-controller flow
                confirmed.add(sw)
        return len(confirmed) == len(self.fabric.switches)

    def _flow_count(self, switch: str) -> int | None:
        """How many flows `switch` holds (None: a bridge still being configured, ask again)."""
        try:
            flows = self.site.ofctl("dump-aggregate", switch)
        except TestbedError:
            return None
        return int(flows.split("flow_count=")[1].split()[0])

