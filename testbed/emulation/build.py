"""The builder: a model Fabric becomes a Mininet network on Open vSwitch, driven by our controller.

    with Emulation(make_fabric("hpn")) as emu:
        emu.net["p0s0h0"].cmd("ping -c1 10.0.1.1")

Start order (each step a progress phase): write down what will be created (runstate), start the
controller, build the Mininet network (one batched ovs-vsctl, port numbers pinned from the model),
configure hosts (bonds, per-NIC routing) and shape links (HTB + a short bfifo), then poll until every
switch is connected, every NIC port learned from its gratuitous ARP and every switch holds its
routes. Every exit path, Ctrl-C included, tears it all down.

The processes of a run each have one owner: the controller its ControllerProcess, the
processes in hosts their FabricHost (`spawn`), the port detectors a Detectors block.
"""
from __future__ import annotations

import itertools
import os
import sys
import time
from dataclasses import dataclass, field
from functools import partial

from testbed.core import interrupts, progress, sh
from testbed.core.errors import ParamError, PartLost, TestbedError
from testbed.core.lifecycle import Lifecycle
from testbed.core.wait import wait_for
from testbed.emulation import counters, hostnet, keep, runstate, shaping, system
from testbed.emulation.controller import ControllerProcess
from testbed.emulation.detectors import Detectors
from testbed.emulation.hosts import end_unrecorded
from testbed.emulation.watchdog import Watchdog
from testbed.model import wiring
from testbed.model.fabric import Fabric

_RUN_NUMBERS = itertools.count(1)
INACTIVITY_PROBE_MS = 30_000
QUEUE_BYTES = 48_000      # egress bfifo: under ~64 KB so the userspace datapath's socket buffer
                          # does not cap the queue before the qdisc does (platform.md)


@dataclass
class Options:
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


class ControllerRef:
    """What Mininet's OVSSwitch.start needs to point a bridge at our controller: a Unix socket
    (Mininet writes targets as PROTOCOL:IP:PORT; FabricSwitch drops the port)."""
    protocol, name, port = "unix", "c0", 0
    waiting = False      # Mininet's CLI looks up every node by name and waits on it

    def __init__(self, socket: str):
        self.socket = socket

    def IP(self):
        return self.socket

    def start(self):
        pass

    def stop(self):
        pass


class Emulation(Lifecycle):
    starting = "bring-up"      # the phase its start() shows (testbed/core/progress.py)
    def __init__(self, fabric: Fabric, options: Options | None = None, run_id: str | None = None):
        self.fabric = fabric
        self.options = options or Options()
        self.run_id = run_id or f"hpn{os.getpid()}-{next(_RUN_NUMBERS)}"
        self.datapath = self.options.datapath or system.datapath()
        self.bond = self.options.bond or system.bond_backend()
        self.swaps = wiring.parse_swaps(fabric, list(self.options.miswire))   # ParamError first
        self.state = runstate.RunState(self.run_id)
        self.controller = ControllerProcess(self.state, fabric, self.options.routing)
        self.net = None
        self.timings: dict[str, float] = {}
        self.detectors: Detectors | None = None   # with Options(detector=True)
        self.watchdog: Watchdog | None = None
        self._lock: runstate.RunLock | None = None

    # ---- lifecycle (Lifecycle: a failed start stops what it began) ----
    def __exit__(self, exc_type, exc, tb):
        self._failed = keep.failed(exc_type)      # a failed run keeps its directory (keep.py)
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
        # one fabric per machine: names, ports and addresses derive from coordinates, so two
        # fabrics would claim the same interfaces. The lock is held until teardown is done.
        self._lock = runstate.RunLock.take(self.run_id)
        system.check_machine(self.datapath, self.bond)
        taken = (set(self.root_intfs()) | set(self.local_bridges())) & \
            (set(os.listdir("/sys/class/net")) | runstate.all_bridges())
        if taken:
            raise ParamError(f"{len(taken)} names this fabric needs already exist (e.g. "
                             f"{sorted(taken)[0]}): another run is up, or run `hpn-testbed clean`")

    def root_intfs(self) -> list[str]:
        return [l.b_intf for l in self.fabric.links] + \
               [l.a_intf for l in self.fabric.switch_links()]

    # ---- hooks: where the fabric's parts live (testbed/emulation/cluster.py puts them on servers) ----
    def local_bridges(self) -> list[str]:
        """The bridges this run makes in this machine's Open vSwitch."""
        return list(self.fabric.switches)

    def make_watchdog(self) -> Watchdog:
        return Watchdog(self.controller, list(self.fabric.switches), f"unix:{self.controller.socket}")

    def end_strays(self, net) -> None:
        """End the processes in the hosts' namespaces that the run did not record."""
        end_unrecorded(net, {pid for pid, *_ in self.state.data["pids"]})

    def remove_root_links(self) -> None:
        runstate.delete_links(self.root_intfs())

    def start(self) -> None:
        t0 = time.monotonic()
        self.preflight()
        self.state.data["about"] = {"family": self.fabric.family, "switches": len(self.fabric.switches),
                                    "hosts": len(self.fabric.hosts), "nics": len(self.fabric.nics()),
                                    "datapath": self.datapath}     # for `hpn-testbed ps`
        self.state.create()
        self.state.add("bridges", *self.local_bridges())
        self.state.add("root_intfs", *self.root_intfs())
        self.controller.start()
        self.timings["controller"] = time.monotonic() - t0
        with progress.phase(f"namespaces, switches, links ({len(self.fabric.links)})"):
            self.build_network()
        self.timings["network"] = time.monotonic() - t0
        with progress.phase("hosts: bonds, routes, link shaping"):
            self.configure_hosts()
            self.shape_links()
        self.timings["hosts"] = time.monotonic() - t0
        self.wait_ready()
        self.watchdog = self.make_watchdog().start()
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
            lost = self.controller.status().get("lost") or []
            if lost:
                raise PartLost(f"switch {lost[0]} lost its connection to the controller")

    def _teardown(self) -> None:
        if self.watchdog is not None:
            self.watchdog.stop()
        if self.detectors is not None:
            detectors, self.detectors = self.detectors, None
            detectors.stop()
        if self.net is not None:
            net, self.net = self.net, None
            self.end_strays(net)
            try:
                # links in one kernel batch instead of Mininet's shell round trip per link,
                # then the bridges in one ovs-vsctl (OVS reconfigures once for all vanished ports)
                net.links = []
                self.remove_root_links()
                net.stop()
            except Exception as e:   # go on: runstate.destroy removes what is left
                print(f"warning: mininet stop: {e}", file=sys.stderr)
        self.controller.stop()
        if self.state.dir.exists():
            if keep.wanted() or getattr(self, "_failed", False) or keep.failed(sys.exc_info()[0]):
                keep.keep(self.state.dir)
            runstate.destroy(self.state)
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # ---- steps ----
    def build_network(self) -> None:
        from mininet.link import Link
        from mininet.log import setLogLevel
        from mininet.net import Mininet
        from mininet.node import OVSSwitch

        run_id, datapath, socket = self.run_id, self.datapath, f"unix:{self.controller.socket}"

        from testbed.emulation.hosts import FabricHost
        FabricHost.run_state = self.state

        class FabricSwitch(OVSSwitch):
            def bridgeOpts(self):
                # tag the bridge so `clean` finds it and nothing else
                return super().bridgeOpts() + f" external-ids:{runstate.OVS_TAG}={run_id}"

            def vsctl(self, *args, **kwargs):
                # Mininet writes controller targets as PROTOCOL:IP:PORT; a unix: target has no
                # port. A controller busy with a burst of events is not a dead one: OVS probes
                # it only after INACTIVITY_PROBE_MS of silence (the watchdog watches the process)
                ours = f'{socket}\\" inactivity_probe={INACTIVITY_PROBE_MS}'
                return super().vsctl(*[str(a).replace(f'{socket}:0\\"', ours) for a in args], **kwargs)

        setLogLevel("error")
        net = Mininet(topo=None, build=False, controller=None, autoSetMacs=False,
                      autoStaticArp=False, waitConnected=False)
        self.net = net
        for sw in self.fabric.switches.values():
            net.addSwitch(sw.name, cls=FabricSwitch, dpid="%016x" % sw.dpid, protocols="OpenFlow15",
                          datapath="user" if datapath == "netdev" else "kernel", batch=True,
                          failMode="secure")
        for host in self.fabric.hosts.values():
            net.addHost(host.name, cls=FabricHost, ip=None)
        for l in wiring.as_built(self.fabric, self.swaps):   # the blueprint, unless miswired
            if l.a in self.fabric.switches:
                net.addLink(l.a, l.b, port1=l.a_port, port2=l.b_port, intfName1=l.a_intf,
                            intfName2=l.b_intf, cls=Link)
            else:
                nic = next(n for n in self.fabric.hosts[l.a].nics if l.a_intf in n.ports)
                net.addLink(l.a, l.b, port1=nic.index * len(nic.ports) + l.a_port, port2=l.b_port,
                            intfName1=l.a_intf, intfName2=l.b_intf, addr1=nic.mac, cls=Link)
        net.controllers.append(ControllerRef(str(self.controller.socket)))
        # on a fabric without a core switch c0 (mpft, mrft) the name must still resolve: Mininet's
        # CLI looks up every node it iterates, controllers too, and looped on the KeyError
        net.nameToNode.setdefault(ControllerRef.name, net.controllers[-1])
        net.build()
        self.state.add_processes(*[(h.pid, "mininet:") for h in net.hosts + net.switches])
        self.state.data["hosts"] = {h.name: h.pid for h in net.hosts}   # for `trace --fabric RUN`
        self.state.save()
        net.start()

    def configure_hosts(self) -> None:
        sh.nodes_cmd([(self.net[host.name], hostnet.host_script(host, self.bond, self.datapath))
                      for host in self.fabric.hosts.values()])

    def shape_links(self) -> None:
        q = self.options.queue_bytes
        self.tc_on_links(self.fabric.links, lambda intf, mbit: shaping.shaping_lines(intf, mbit, q))

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
            self.switches_batch("tc -batch -", on_switches)
        sh.nodes_cmd([(self.net[host], "tc -batch - <<'EOF'\n" + "\n".join(lines) + "\nEOF")
                      for host, lines in on_hosts.items()])

    def status(self) -> dict:
        return self.controller.status()

    def expected_attachments(self) -> int:
        return sum(len(n.ports) for n in self.fabric.nics())

    def announce(self, ports: set[str] | None = None) -> None:
        """Hosts send a gratuitous ARP on each NIC port (or on `ports` only)."""
        self.send_frames([line for h in self.fabric.hosts.values()
                          for line in hostnet.garp_lines(h, self.net[h.name].pid, ports)])

    def send_frames(self, lines: list[str]) -> None:
        """Send `PID PORT HEXFRAME` lines' frames from hosts' ports, all from one process."""
        sh.run([sys.executable, "-m", "testbed.inhost.frames"], input="\n".join(lines) + "\n",
               timeout=120)

    def unlearned_ports(self, status: dict) -> set[str]:
        """Host ports whose switch end the controller has not yet learned a NIC on."""
        learned = {tuple(at) for ats in status.get("learned", {}).values() for at in ats}
        return {l.a_intf for l in self.fabric.host_links() if (l.b, l.b_port) not in learned}

    def wait_ready(self) -> None:
        timeout = self.options.ready_timeout
        n = len(self.fabric.switches)
        with progress.phase(f"switches connecting ({n})"):
            self.controller.wait(lambda s: len(s.get("connected", [])) == n,
                                 f"all {n} switches to connect to the controller", timeout)
        self.learn_ports(timeout)
        with progress.phase("checking every switch's routes"):   # one found complete is not asked again
            wait_for("every switch to hold its routes", partial(self.routes_installed, set()), timeout, 0.1)

    @progress.phase("learning NIC ports")
    def learn_ports(self, timeout: float) -> None:
        deadline, missing, total = time.monotonic() + timeout, None, self.expected_attachments()
        while missing != set():   # announce, poll; announce again on the ports still unlearned
            self.announce(missing)
            try:
                self.controller.wait(lambda s: not self.unlearned_ports(s),
                                     f"the controller to learn all {total} NIC ports", 1.0)
                missing = set()
            except TestbedError:
                missing = self.unlearned_ports(self.status())
                progress.note(f"{total - len(missing)} of {total} learned")
                if time.monotonic() > deadline:
                    raise

    def routes_installed(self, confirmed: set[str] | None = None) -> bool:
        """Read the switches themselves: does each hold the routes the controller says it sent?
        Switches in `confirmed` are not asked again; those found complete are added to it."""
        confirmed = set() if confirmed is None else confirmed
        status = self.status()
        if not status.get("settled", True):
            return False
        per_switch = status.get("routes_per_switch", {})
        for sw in self.fabric.switches:
            if sw in confirmed:
                continue
            try:
                flows = self.ofctl("dump-aggregate", sw)
            except TestbedError:   # a bridge still being configured: ask again on the next poll
                return False
            count = int(flows.split("flow_count=")[1].split()[0])
            if count < per_switch.get(sw, 0) + 1:   # + the ARP-to-controller flow
                return False
            confirmed.add(sw)
        return True

    # ---- helpers for users of a running emulation ----
    def ofctl(self, command: str, switch: str, *args: str) -> str:
        return sh.run(["ovs-ofctl", "-O", "OpenFlow15", command, switch, *args])

    def appctl(self, switch: str, *args: str) -> str:
        """ovs-appctl on the Open vSwitch that runs `switch`."""
        return sh.run(["ovs-appctl", *args])

    # Where the switches' ports live: this machine's root namespace here, each switch's server in
    # ClusterEmulation. Faults, traces and meters go through these, never straight to this machine.
    def carrier_follows(self, link) -> bool:
        """Does one end of `link` losing carrier take the other end down too? (a veth: yes)"""
        return True

    def switch_run(self, switch: str, script: str, input: str | None = None, timeout: float = 60) -> str:
        """Run a bash script in the root namespace that holds `switch` and its ports."""
        return sh.run(["bash", "-c", "set -e\n" + script], input=input, timeout=timeout)

    def switches_batch(self, command: str, lines: dict[str, list[str]]) -> None:
        """Feed each switch's `lines` to `command` (`ip -batch -`), one process per machine."""
        sh.run(command, input="".join(line + "\n" for ls in lines.values() for line in ls))

    def sampler(self, intfs, interval: float = 0.05, counter: str = "tx_bytes", queues: bool = True):
        """A counters.Sampler over switch-side interfaces (a context manager)."""
        return counters.Sampler(list(intfs), interval, counter=counter, queues=queues)

    def counters(self, intfs, names=("tx_bytes",)) -> dict[str, tuple[int, ...]]:
        """Switch-side interfaces' statistics counters `names`, in that order."""
        return counters.read(intfs, names)

    def dump_flows(self) -> str:
        """Every switch's flows and groups, for a failing test's output."""
        out = []
        for sw in self.fabric.switches:
            out.append(f"--- {sw}\n" + self.ofctl("dump-flows", sw) + self.ofctl("dump-groups", sw))
        return "\n".join(out)

    def controller_log(self) -> str:
        return self.controller.log()

    def describe(self) -> dict:
        return {"run": self.run_id, "family": self.fabric.family, "datapath": self.datapath,
                "bond": self.bond if any(len(n.ports) > 1 for n in self.fabric.nics()) else None,
                "routing": self.options.routing, "timings_s": {k: round(v, 2) for k, v in self.timings.items()}}

