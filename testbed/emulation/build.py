"""The builder: a model Fabric becomes a Mininet network on Open vSwitch, driven by our controller.

    with Emulation(make_fabric("hpn")) as emu:
        emu.net["p0s0h0"].cmd("ping -c1 10.0.1.1")

Start order (each step a progress phase): write down what will be created (runstate), start the
controller, build the Mininet network (nodes' shells from a few threads, every cable in one
kernel batch); once the controller listens, Open vSwitch adds the switches and ports (one
batched ovs-vsctl, port numbers pinned from the model), then the hosts configure themselves
(bonds, per-NIC routing, their ports' shaping: HTB + a short bfifo) and the switches' ends are
shaped; then poll until every switch is connected, every NIC port learned from its gratuitous
ARP and every switch holds its routes.
Every exit path, Ctrl-C included, tears it all down.

Where the fabric runs is an object of its own, `site` (site.py: this machine, the default;
cluster.py: servers): it owns what differs by place (the controller's reach, the Mininet
classes, commands where a switch lives, meters, leftovers); this module is the same for both.

The processes of a run each have one owner: the controller its ControllerProcess, the
processes in hosts their FabricHost (`spawn`), the port detectors a Detectors block.
"""
from __future__ import annotations

import itertools
import os
import sys
import time
from dataclasses import dataclass, field

from testbed.core import interrupts, progress, sh
from testbed.core.errors import ParamError, PartLost, TestbedError
from testbed.core.lifecycle import Lifecycle
from testbed.emulation import nodestart
from testbed.emulation.control.watchdog import Watchdog
from testbed.emulation.detectors import Detectors
from testbed.emulation.net import hostnet, shaping, system
from testbed.emulation.readiness import Readiness
from testbed.emulation.run import keep, runstate, teardown
from testbed.emulation.site import LocalSite
from testbed.model import wiring
from testbed.model.contract import ControllerStatus
from testbed.model.fabric import Fabric

_RUN_NUMBERS = itertools.count(1)
QUEUE_BYTES = 48_000      # egress bfifo: under ~64 KB so the userspace datapath's socket buffer
                          # does not cap the queue before the qdisc does (platform.md)


@dataclass
class Options:
    """How a fabric is brought up: the controller's routing options (as `up --policy/--ecmp/
    --core`: {"policy": "static", "matrix": [...]}), queues, datapath and bond (None: detect),
    the host-side detector, and cables to miswire on purpose."""
    routing: dict = field(default_factory=dict)   # passed to the controller, e.g. {"ecmp": "seeded"}
    queue_bytes: int = QUEUE_BYTES
    datapath: str | None = None                    # None: detect (system where the kernel has it)
    bond: str | None = None                        # None: detect (bonding where the kernel has it)
    ready_timeout: float = 60.0
    # the host-side probe-based port detector (claim C4; testbed/detector.py): off by default
    detector: bool = False
    detector_hosts: tuple[str, ...] | None = None   # None: every host with a dual-ported NIC
    detector_interval: float = 0.015                # seconds between ARP probes per port
    detector_dead_after: float = 0.06               # silence that takes a port out of its bond
    # cables to swap on purpose (claim C9): "SWITCH-ethN,SWITCH-ethM" pairs, one tier each
    miswire: tuple[str, ...] = ()
    mtu: int | None = None                         # bytes, every link and host port (None: HPN_MTU, default)
    send_buffer: bool | None = None                # raise OVS's send buffer (sendbuf.py; None: env)
    # a user's os-ken app instead of ours or beside it (controller_app.py: checked, ControllerApp)
    controller_app: object = None


class Emulation(Readiness, Lifecycle):
    """A fabric up on Open vSwitch: namespaces, switches, cables, hosts and the controller, torn
    down when its `with` block ends, however it ends. `emu.fabric`, `emu.net[host]` (a Mininet
    node), `counters`, `sampler`, `ofctl`, `status()`, `describe()`."""
    starting = "bring-up"      # the phase its start() shows (testbed/core/progress.py)

    def __init__(self, fabric: Fabric, options: Options | None = None, run_id: str | None = None,
                 site=None):
        self.fabric = fabric
        self.options = options or Options()
        self.site = site or LocalSite(fabric)       # where it runs (ParamError before anything exists)
        self.run_id = run_id or f"hpn{os.getpid()}-{next(_RUN_NUMBERS)}"
        self.datapath = self.site.datapath(self.options.datapath)
        self.bond = self.options.bond or system.bond_backend()
        # what holds a dual-ported NIC's address on the multipath fallback (hostnet.NIC_LINKS)
        self.nic_link = system.nic_link() if self.bond == "multipath" else None
        self.mtu = self.site.mtu(self.options.mtu)   # ParamError before anything exists
        self.raise_send_buffer = (system.send_buffer() if self.options.send_buffer is None
                                  else self.options.send_buffer)
        self.swaps = wiring.parse_swaps(fabric, list(self.options.miswire))   # ParamError first
        self.state = runstate.RunState(self.run_id)
        self.controller = self.site.make_controller(self.state, self.options.routing,
                                                  self.options.controller_app)
        self.net = None
        self.timings: dict[str, float] = {}
        self.detectors: Detectors | None = None   # with Options(detector=True)
        self.send_buffer: int | None = None       # OVS's send buffer, if this run raised it (sendbuf.py)
        self.watchdog: Watchdog | None = None
        self._lock: runstate.RunLock | None = None

    # ---- lifecycle (Lifecycle: a failed start stops what it began) ----
    def __exit__(self, exc_type, exc, tb):
        # a failed run keeps its directory (keep.py), with what failed it
        self._failure = keep.failure(exc_type, exc)
        while True:
            try:
                self.stop()
                break
            except (KeyboardInterrupt, interrupts.Terminated, PartLost):
                continue   # a signal just before the teardown took effect: tear down again
        lost = self.watchdog.lost if self.watchdog is not None else None
        if exc_type is None and lost:
            raise PartLost(lost)   # what ran inside the block ran on a broken fabric

    def preflight(self) -> None:
        """Refuse to start, before creating anything, when this run could not succeed or clean up."""
        if os.geteuid() != 0:
            raise ParamError("hpn-testbed needs root (network namespaces, Open vSwitch)")
        runstate.check_root()
        # one fabric per machine: names, ports and addresses derive from coordinates, so two
        # fabrics would claim the same interfaces. The lock is held until teardown is done.
        self._lock = runstate.RunLock.take(self.run_id)
        system.check_machine(self.datapath, self.bond)
        self.site.preflight()

    def start(self) -> None:
        t0 = time.monotonic()
        if self._lock is None:   # not yet run by the `with` block (Lifecycle.__enter__)
            self.preflight()
        self.state.data["about"] = {"family": self.fabric.family, "switches": len(self.fabric.switches),
                                    "hosts": len(self.fabric.hosts), "nics": len(self.fabric.nics()),
                                    "datapath": self.datapath,     # for `hpn-testbed ps`
                                    "queue_bytes": self.options.queue_bytes}   # `link clear`
        self.state.create()
        self.site.record(self.state)
        self.controller.start()
        self.timings["controller"] = time.monotonic() - t0
        with progress.phase(f"namespaces, switches, links ({len(self.fabric.links)})"):
            self.build_network()
        self.timings["network"] = time.monotonic() - t0
        with progress.phase("switches' ports, then hosts: bonds, routes, link shaping"):
            self.start_switches_and_hosts()
        self.timings["hosts"] = time.monotonic() - t0
        self.wait_ready()
        if self.raise_send_buffer:
            self.send_buffer = self.site.when_ready(self.state, self.datapath, self.options.queue_bytes)
        self.watchdog = self.site.make_watchdog(self.controller).start()
        if self.options.detector:
            self.detectors = Detectors(self, self.options.detector_hosts,
                                       self.options.detector_interval,
                                       self.options.detector_dead_after).__enter__()
        self.timings["ready"] = time.monotonic() - t0

    def stop(self) -> None:
        """Tear down, tolerant of a half-built network; safe to call twice. Signals that arrive
        meanwhile do not cut it short (testbed.core.interrupts)."""
        with interrupts.teardown():
            self._teardown()

    def check_whole(self) -> None:
        """Raise PartLost if a part of the run (controller, a switch's connection) was lost."""
        if self.watchdog is not None and self.watchdog.lost:
            raise PartLost(self.watchdog.lost)
        if self.controller.proc is not None and self.controller.proc.poll() is None:
            lost = self.controller.status().lost
            if lost:
                raise PartLost(f"switch {lost[0]} lost its connection to the controller")

    def _teardown(self) -> None:
        if self.watchdog is not None:
            self.watchdog.stop()
        if self.detectors is not None:
            detectors, self.detectors = self.detectors, None
            detectors.stop()
        # the controller first: while it runs, each port the teardown removes is a port-status
        # event it answers by recomputing every NIC's routes and rewriting them on switches
        # that are about to go
        self.controller.stop()
        if self.net is not None:
            net, self.net = self.net, None
            self.site.end_strays(net, self.state)
            try:
                # links in one batch per machine instead of Mininet's shell round trip per link,
                # then the bridges in one ovs-vsctl (OVS reconfigures once for all vanished ports)
                net.links = []
                self.site.before_bridges_go(self.state)
                self.site.remove_links(self.state)
                net.stop()
            except Exception as e:   # go on: teardown.destroy removes what is left
                print(f"warning: mininet stop: {e}", file=sys.stderr)
        try:
            if self.state.dir.exists():
                failure = (getattr(self, "_failure", None) or keep.failure(*sys.exc_info()[:2])
                           or self._lost())
                if keep.wanted() or failure:
                    keep.keep(self.state.dir, failure)
                self._destroy(failure)
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def _lost(self) -> str | None:
        """What the watchdog saw lost, as keep.failure says a failure (None: nothing)."""
        lost = self.watchdog.lost if self.watchdog is not None else None
        return f"PartLost: {lost}" if lost else None

    def _destroy(self, failure: str | None) -> None:
        """What the run recorded, removed. What could not be (bridges of a dead Open vSwitch)
        stays recorded for `clean`; when the run already failed (a lost part), that is said as a
        warning and the failure, which names what was lost, stays the run's end."""
        try:
            teardown.destroy(self.state)
        except TestbedError as e:
            if not failure:
                raise
            print(f"warning: {e}", file=sys.stderr)

    # ---- steps ----
    def build_network(self) -> None:
        from mininet.log import setLogLevel
        from mininet.net import Mininet

        setLogLevel("error")
        net = Mininet(topo=None, build=False, controller=None, autoSetMacs=False,
                      autoStaticArp=False, waitConnected=False)
        self.net = net
        switch_cls = self.site.switch_class(self.run_id, self.controller)
        nodestart.add_nodes(net, [
            *[("switch", sw.name, switch_cls, dict(dpid=f"{sw.dpid:016x}", failMode="secure",
                                                   protocols=self.controller.protocols,
                                                   **self.site.switch_options(sw.name, self.datapath)))
              for sw in self.fabric.switches.values()],
            *[("host", host.name, self.site.host_class,
               dict(ip=None, run_state=self.state, **self.site.host_options(host.name)))
              for host in self.fabric.hosts.values()]], self.site.node_workers)
        self.site.record_nodes(net, self.state)
        built = wiring.as_built(self.fabric, self.swaps)      # the blueprint, unless miswired
        self.site.make_links(built, {h.name: h.pid for h in net.hosts}, self.mtu)
        for l in built:
            ends = {"port2": l.b_port, "intfName1": l.a_intf, "intfName2": l.b_intf,
                    "cls": self.site.link_class}
            if l.a in self.fabric.switches:
                net.addLink(l.a, l.b, port1=l.a_port, **ends)
            else:
                nic = next(n for n in self.fabric.hosts[l.a].nics if l.a_intf in n.ports)
                net.addLink(l.a, l.b, port1=nic.index * len(nic.ports) + l.a_port, addr1=nic.mac, **ends)
        net.controllers.append(self.site.controller_ref(self.controller))
        # on a fabric without a core switch c0 (mpft, mrft) the name must still resolve: Mininet's
        # CLI looks up every node it iterates, controllers too, and looped on the KeyError
        net.nameToNode.setdefault(net.controllers[-1].name, net.controllers[-1])
        net.build()
        self.site.built(net, self.controller)

    def start_switches_and_hosts(self) -> None:
        """Once the controller listens (OVS retries a refused connection only after a second),
        Open vSwitch adds every switch and port (Mininet's start: one ovs-vsctl, which waits for
        ovs-vswitchd); then every host configures and shapes its own ports, all at once, and the
        switches' ends are shaped (adding a port may reset its qdisc). In this order, not side
        by side: OVS adds a port whose carrier is already up at twice the cost
        (bench/results/journal.md, 2026-12-02)."""
        q = self.options.queue_bytes
        on_switches, on_hosts = shaping.ends_lines(
            self.fabric, self.fabric.links, lambda intf, mbit: shaping.shaping_lines(intf, mbit, q))
        self.controller.wait_listening(self.options.ready_timeout)
        self.net.start()
        self.configure_hosts(on_hosts)
        if on_switches:
            self.site.switches_batch("tc -batch -", on_switches)

    def configure_hosts(self, tc_lines: dict[str, list[str]]) -> None:
        """Every host's script (hostnet.py), its ports' `tc_lines` in it, all hosts at once."""
        bare = not self.controller.ours     # a user's app alone: no gateway, NICs on-link
        sh.nodes_cmd([(self.net[host.name],
                       hostnet.host_script(host, self.bond, self.datapath, bare, self.mtu,
                                           tc_lines.get(host.name, []), self.nic_link))
                      for host in self.fabric.hosts.values()])

    def set_rates(self, fabric: Fabric) -> None:
        """Give each cable the rate `fabric` (the same cables, other parameters: e.g. another
        core oversubscription) gives it, on the running network; `fabric` becomes the run's model.
        Routes stay as computed at the start (a rate-aware policy keeps its old capacities)."""
        ends = [(l.a_intf, l.b_intf) for l in self.fabric.links]
        if [(l.a_intf, l.b_intf) for l in fabric.links] != ends:
            raise ValueError("set_rates: the new fabric must have the running one's cables")
        changed = [new for old, new in zip(self.fabric.links, fabric.links)
                   if fabric.link_mbit(new) != self.fabric.link_mbit(old)]
        self.tc_on_links(changed, shaping.rate_lines, fabric)
        self.fabric = fabric   # only once the links have its rates

    def tc_on_links(self, links, lines_of, fabric: Fabric | None = None) -> None:
        """tc lines `lines_of(intf, mbit)` at both ends of each link, at the rate `fabric` (the
        run's, by default) gives it: the switches' ends in one batch per machine, each host's in
        that host."""
        on_switches, on_hosts = shaping.ends_lines(fabric or self.fabric, links, lines_of)
        if on_switches:
            self.site.switches_batch("tc -batch -", on_switches)
        sh.nodes_cmd([(self.net[host], "tc -batch - <<'EOF'\n" + "\n".join(lines) + "\nEOF")
                      for host, lines in on_hosts.items()])

    def status(self) -> ControllerStatus:
        return self.controller.status()

    # ---- helpers for users of a running emulation (the rest is emu.site's) ----
    def ofctl(self, command: str, switch: str, *args: str) -> str:
        return self.site.ofctl(command, switch, *args)

    def sampler(self, intfs, interval: float = 0.05, counter: str = "tx_bytes", queues: bool = True):
        """A Sampler over switch-side interfaces (a context manager), wherever they live."""
        return self.site.sampler(intfs, interval, counter=counter, queues=queues)

    def counters(self, intfs, names=("tx_bytes",)) -> dict[str, tuple[int, ...]]:
        """Switch-side interfaces' statistics counters `names`, in that order."""
        return self.site.counters(intfs, names)

    def dump_flows(self) -> str:
        """Every switch's flows and groups, for a failing test's output."""
        out = []
        for sw in self.fabric.switches:
            out.append(f"--- {sw}\n" + self.ofctl("dump-flows", sw) + self.ofctl("dump-groups", sw))
        return "\n".join(out)

    def controller_log(self) -> str:
        return self.controller.log()

    def describe(self) -> dict:
        dual = any(len(n.ports) > 1 for n in self.fabric.nics())
        return {"run": self.run_id, "family": self.fabric.family, "datapath": self.datapath,
                "cpu_precedence": self.state.data["about"].get("cpu_precedence"),   # cpu_precedence.py
                "bond": self.bond if dual else None, "nic_link": self.nic_link if dual else None,
                "routing": self.options.routing, "ovs_send_buffer": self.send_buffer,
                **({"controller_app": self.controller.app.describe()} if self.controller.app else {}),
                "timings_s": {k: round(v, 2) for k, v in self.timings.items()},
                **self.site.describe(self.net)}

