"""The builder: a model Fabric becomes a Mininet network on Open vSwitch, driven by our controller.

    with Emulation(make_fabric("hpn")) as emu:
        emu.net["p0s0h0"].cmd("ping -c1 10.0.1.1")

Start order: write down what will be created (runstate), start the controller, build the
Mininet network (one batched ovs-vsctl, port numbers pinned from the model), configure hosts
(bonds, per-NIC routing) and shape links (HTB + a short bfifo), then wait, by polling, until every
switch is connected, every NIC port has been learned from its gratuitous ARP and every switch
holds its routes. Every exit path, Ctrl-C included, tears it all down.
"""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from testbed import hostnet, runstate, sh, system
from testbed.errors import ParamError, TestbedError
from testbed.topo.model import Fabric

_RUN_NUMBERS = itertools.count(1)
PROJECT = Path(__file__).resolve().parent.parent
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


def wait_for(what: str, condition, timeout: float, interval: float = 0.05):
    """Poll `condition` until it returns something truthy; raise naming `what` on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TestbedError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


class ControllerRef:
    """What Mininet's OVSSwitch.start needs to point a bridge at our controller."""
    protocol, name = "tcp", "c0"

    def __init__(self, port: int):
        self.port = port

    def IP(self):
        return "127.0.0.1"

    def start(self):
        pass

    def stop(self):
        pass


def shaping_lines(intf: str, mbit: float, queue_bytes: int) -> list[str]:
    """tc commands (without `tc`) that cap `intf`'s egress at `mbit` with a byte-limited queue."""
    return [f"qdisc replace dev {intf} root handle 5: htb default 1",
            f"class add dev {intf} parent 5: classid 5:1 htb rate {mbit:.4f}mbit burst 15k",
            f"qdisc add dev {intf} parent 5:1 handle 10: bfifo limit {queue_bytes}"]


class Emulation:
    def __init__(self, fabric: Fabric, options: Options | None = None, run_id: str | None = None):
        self.fabric = fabric
        self.options = options or Options()
        self.run_id = run_id or f"hpn{os.getpid()}-{next(_RUN_NUMBERS)}"
        self.datapath = self.options.datapath or system.datapath()
        self.bond = self.options.bond or system.bond_backend()
        self.state = runstate.RunState(self.run_id)
        self.controller: subprocess.Popen | None = None
        self.net = None
        self.timings: dict[str, float] = {}
        self.detectors: dict[str, int] = {}   # host -> PID of its testbed.detector

    # ---- lifecycle ----
    def __enter__(self) -> "Emulation":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def preflight(self) -> None:
        """Refuse to start, before creating anything, when this run could not succeed or clean up."""
        if os.geteuid() != 0:
            raise ParamError("hpn-testbed needs root (network namespaces, Open vSwitch)")
        if not system.ovs_running():
            raise ParamError("Open vSwitch is not running: start it with "
                             "/usr/share/openvswitch/scripts/ovs-ctl start (or `make setup`)")
        if self.datapath not in ("system", "netdev"):
            raise ParamError(f"datapath={self.datapath!r}: choose system or netdev")
        if self.bond not in ("bonding", "multipath"):
            raise ParamError(f"bond={self.bond!r}: choose bonding or multipath")
        taken = (set(self.root_intfs()) | set(self.fabric.switches)) & \
            (set(os.listdir("/sys/class/net")) | runstate.all_bridges())
        if taken:
            raise ParamError(f"{len(taken)} names this fabric needs already exist (e.g. "
                             f"{sorted(taken)[0]}): another run is up, or run `hpn-testbed clean`")

    def root_intfs(self) -> list[str]:
        return [l.b_intf for l in self.fabric.links] + \
               [l.a_intf for l in self.fabric.switch_links()]

    def start(self) -> None:
        t0 = time.monotonic()
        self.preflight()
        self.state.create()
        self.state.add("bridges", *self.fabric.switches)
        self.state.add("root_intfs", *self.root_intfs())
        self.start_controller()
        self.timings["controller"] = time.monotonic() - t0
        self.build_network()
        self.timings["network"] = time.monotonic() - t0
        self.configure_hosts()
        self.shape_links()
        self.timings["hosts"] = time.monotonic() - t0
        self.wait_ready()
        if self.options.detector:
            self.start_detectors(self.options.detector_hosts)
        self.timings["ready"] = time.monotonic() - t0

    def stop(self) -> None:
        """Tear down, tolerant of a half-built network; safe to call twice."""
        self.stop_detectors()
        if self.net is not None:
            net, self.net = self.net, None
            try:
                # links in one kernel batch instead of Mininet's shell round trip per link,
                # then the bridges in one ovs-vsctl (OVS reconfigures once for all vanished ports)
                net.links = []
                runstate.delete_links(self.root_intfs())
                net.stop()
            except Exception as e:   # go on: runstate.destroy removes what is left
                print(f"warning: mininet stop: {e}", file=sys.stderr)
        if self.controller is not None:
            runstate.kill_pid(self.controller.pid, "controller.launcher")
            self.controller.wait(timeout=5)
            self.controller = None
        if self.state.dir.exists():
            runstate.destroy(self.state)

    # ---- steps ----
    def start_controller(self) -> None:
        from controller.launcher import free_port
        self.port = free_port()
        spec = {"family": self.fabric.family, "params": asdict(self.fabric.params),
                "routing": self.options.routing, "status": str(self.state.dir / "status.json")}
        (self.state.dir / "spec.json").write_text(json.dumps(spec))
        log = open(self.state.dir / "controller.log", "w")
        env = dict(os.environ, HPN_TESTBED_SPEC=str(self.state.dir / "spec.json"),
                   PYTHONPATH=f"{PROJECT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
        self.controller = subprocess.Popen(
            [sys.executable, "-m", "controller.launcher", "controller.app", str(self.port)],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=PROJECT, start_new_session=True)
        self.state.add("pids", [self.controller.pid, "controller.launcher"])

    def build_network(self) -> None:
        from mininet.link import Link
        from mininet.log import setLogLevel
        from mininet.net import Mininet
        from mininet.node import Host, OVSSwitch

        run_id, datapath = self.run_id, self.datapath

        class FabricSwitch(OVSSwitch):
            def bridgeOpts(self):
                # tag the bridge so `clean` finds it and nothing else
                return super().bridgeOpts() + f" external-ids:{runstate.OVS_TAG}={run_id}"

        setLogLevel("error")
        net = Mininet(topo=None, build=False, controller=None, autoSetMacs=False,
                      autoStaticArp=False, waitConnected=False)
        self.net = net
        for sw in self.fabric.switches.values():
            net.addSwitch(sw.name, cls=FabricSwitch, dpid="%016x" % sw.dpid, protocols="OpenFlow15",
                          datapath="user" if datapath == "netdev" else "kernel", batch=True,
                          failMode="secure")
        for host in self.fabric.hosts.values():
            net.addHost(host.name, cls=Host, ip=None)
        for l in self.fabric.links:
            if l.a in self.fabric.switches:
                net.addLink(l.a, l.b, port1=l.a_port, port2=l.b_port, intfName1=l.a_intf,
                            intfName2=l.b_intf, cls=Link)
            else:
                nic = next(n for n in self.fabric.hosts[l.a].nics if l.a_intf in n.ports)
                net.addLink(l.a, l.b, port1=nic.index * len(nic.ports) + l.a_port, port2=l.b_port,
                            intfName1=l.a_intf, intfName2=l.b_intf, addr1=nic.mac, cls=Link)
        net.controllers.append(ControllerRef(self.port))
        net.build()
        self.state.add("pids", *[[h.pid, "mininet:"] for h in net.hosts + net.switches])
        self.state.data["hosts"] = {h.name: h.pid for h in net.hosts}   # for `trace --fabric RUN`
        self.state.save()
        net.start()

    def configure_hosts(self) -> None:
        sh.nodes_cmd([(self.net[host.name], hostnet.host_script(host, self.bond, self.datapath))
                      for host in self.fabric.hosts.values()])

    def shape_links(self) -> None:
        scale, q = self.fabric.params.scale, self.options.queue_bytes
        root, per_host = [], {}
        for l in self.fabric.links:
            mbit = l.gbps * scale
            root += shaping_lines(l.b_intf, mbit, q)
            if l.a in self.fabric.switches:
                root += shaping_lines(l.a_intf, mbit, q)
            else:
                per_host.setdefault(l.a, []).extend(shaping_lines(l.a_intf, mbit, q))
        sh.run(["tc", "-batch", "-"], input="\n".join(root) + "\n")
        sh.nodes_cmd([(self.net[host], "tc -batch - <<'EOF'\n" + "\n".join(lines) + "\nEOF")
                      for host, lines in per_host.items()])

    def status(self) -> dict:
        try:
            return json.loads((self.state.dir / "status.json").read_text())
        except (OSError, ValueError):
            return {}

    def expected_attachments(self) -> int:
        return sum(len(n.ports) for n in self.fabric.nics())

    def announce(self) -> None:
        """Every host sends a gratuitous ARP on each NIC port."""
        sh.nodes_cmd([(self.net[h.name], f"{sys.executable} -m testbed.garp "
                       + " ".join(hostnet.garp_args(h))) for h in self.fabric.hosts.values()])

    def wait_ready(self) -> None:
        timeout = self.options.ready_timeout
        n = len(self.fabric.switches)
        self._wait_controller(lambda s: len(s.get("connected", [])) == n,
                              f"all {n} switches to connect to the controller", timeout)
        want = self.expected_attachments()
        deadline = time.monotonic() + timeout
        while True:   # announce, then poll; announce again while ports are still unlearned
            self.announce()
            try:
                self._wait_controller(
                    lambda s: sum(len(v) for v in s.get("learned", {}).values()) >= want,
                    f"the controller to learn all {want} NIC ports", 1.0)
                break
            except TestbedError:
                if time.monotonic() > deadline:
                    raise
        wait_for("every switch to hold its routes", self.routes_installed, timeout, 0.1)

    def _wait_controller(self, condition, what: str, timeout: float) -> None:
        def check():
            if self.controller.poll() is not None:
                raise TestbedError("the controller exited; its log:\n" + self.controller_log())
            return condition(self.status())
        wait_for(what, check, timeout)

    def routes_installed(self) -> bool:
        """Read the switches themselves: does each hold the routes the controller says it sent?"""
        per_switch = self.status().get("routes_per_switch", {})
        for sw in self.fabric.switches:
            try:
                flows = self.ofctl("dump-aggregate", sw)
            except TestbedError:   # a bridge still being configured: ask again on the next poll
                return False
            count = int(flows.split("flow_count=")[1].split()[0])
            if count < per_switch.get(sw, 0) + 1:   # + the ARP-to-controller flow
                return False
        return True

    # ---- the host-side port detector ----
    DETECTOR_MARKER = "testbed.detector"

    def detector_log(self, host: str) -> Path:
        return self.state.dir / f"detector-{host}.log"

    def start_detectors(self, hosts=None) -> dict[str, int]:
        """Start testbed.detector in `hosts` (default: every host with a dual-ported NIC); PIDs.

        Returns once each has sent its first probes (its log says "start")."""
        import shlex
        started = {}
        for host in self.fabric.hosts.values():
            specs = hostnet.detector_specs(host, self.bond)
            if not specs or (hosts is not None and host.name not in hosts):
                continue
            log = self.detector_log(host.name)
            # an environment prefix, not `cd X &&`: $! must be the detector itself, not a subshell
            cmd = (f"PYTHONPATH={shlex.quote(str(PROJECT))} {shlex.quote(sys.executable)} -m {self.DETECTOR_MARKER}"
                   f" --interval {self.options.detector_interval}"
                   f" --dead-after {self.options.detector_dead_after} --log {shlex.quote(str(log))} "
                   + " ".join(shlex.quote(json.dumps(s)) for s in specs))
            # in a subshell, so it is no job of the host's shell (whose `wait` would wait for it)
            pid = int(self.net[host.name].cmd(
                f"( {cmd} >>{shlex.quote(str(log))}.err 2>&1 & echo $! )").split()[-1])
            self.state.add("pids", [pid, self.DETECTOR_MARKER])
            started[host.name] = pid
        for host, pid in started.items():
            wait_for(f"the detector on {host}",
                     lambda: '"start"' in _read(self.detector_log(host)) or self._detector_failed(host, pid),
                     10)
        self.detectors.update(started)
        return started

    def _detector_failed(self, host: str, pid: int) -> bool:
        if Path(f"/proc/{pid}").exists():
            return False
        raise TestbedError(f"the detector on {host} exited: {_read(Path(str(self.detector_log(host)) + '.err'))}")

    def stop_detectors(self) -> None:
        for host, pid in self.detectors.items():
            runstate.kill_pid(pid, self.DETECTOR_MARKER)
        self.detectors = {}

    def detector_events(self, host: str) -> list[dict]:
        """The detector's state changes on `host` (JSON lines; t is CLOCK_MONOTONIC)."""
        return [json.loads(l) for l in _read(self.detector_log(host)).splitlines() if l.strip()]

    # ---- helpers for users of a running emulation ----
    def ofctl(self, command: str, switch: str, *args: str) -> str:
        return sh.run(["ovs-ofctl", "-O", "OpenFlow15", command, switch, *args])

    def dump_flows(self) -> str:
        """Every switch's flows and groups, for a failing test's output."""
        out = []
        for sw in self.fabric.switches:
            out.append(f"--- {sw}\n" + self.ofctl("dump-flows", sw) + self.ofctl("dump-groups", sw))
        return "\n".join(out)

    def controller_log(self) -> str:
        try:
            return (self.state.dir / "controller.log").read_text()[-4000:]
        except OSError:
            return ""

    def describe(self) -> dict:
        return {"run": self.run_id, "family": self.fabric.family, "datapath": self.datapath,
                "bond": self.bond if any(len(n.ports) > 1 for n in self.fabric.nics()) else None,
                "routing": self.options.routing, "timings_s": {k: round(v, 2) for k, v in self.timings.items()}}


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
