"""One fabric across several servers, on Mininet Cluster Edition (mininet/examples/cluster.py).

    with ClusterEmulation(make_fabric("hpn"), servers=["hpn-srv1", "hpn-srv2"]) as emu: ...

The model places whole units (testbed/model/placement.py), so only switch-to-switch cables are
cut. MCE's remote classes (RemoteMixin, RemoteOVSSwitch, RemoteLink) do the rest, used as a
library with these overrides, each for a reason:
- ssh: our ssh configuration (key-only, known host keys) instead of the user's agent; every
  remote argument shell-quoted (ssh joins argv with spaces: `bash -c SCRIPT` arrived split);
  stdin closed unless given (a node's command must not read our terminal).
- interfaces: Node.addIntf moves an interface with a *local* `ip link set ... netns PID`; a
  remote interface is already made in its namespace, so the move is skipped.
- switch start: RemoteOVSSwitch.batchStartup types one long ovs-vsctl into a pty, which cuts
  lines past 4,096 characters (mininet#916); we send it to `bash -s` on standard input.
- cut links: RemoteVXLANLink, modelled on RemoteGRELink (this kernel has no GRE): one VXLAN
  device per end, its own VNI, MTU 1500 on an underlay with room for the 50-byte header,
  offloads off (the userspace datapath sends what it gets).
- the controller listens on TCP with mutual TLS on the machine's underlay address (switches on
  other servers cannot reach its Unix socket); only switches with the run's certificate connect.
Processes are recorded by their local PIDs (the ssh clients); the servers' own PIDs go in the
run state under "servers" with each server's bridges and interfaces, which `clean` removes.
"""
from __future__ import annotations

import contextlib
import contextvars
import shlex

from testbed.core import sh
from testbed.core.errors import ParamError
from testbed.emulation import cluster_parts, hostnet
from testbed.emulation.build import Emulation
from testbed.emulation.cluster_parts import ClusterController, ClusterWatchdog, Server
from testbed.model import wiring
from testbed.model.placement import place

# the servers `run --servers` chose, for every emulation the scenarios build meanwhile
_SERVERS: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("servers", default=())


@contextlib.contextmanager
def on_servers(servers):
    """Every make_emulation inside this block builds across `servers` (none: on this machine)."""
    token = _SERVERS.set(tuple(servers or ()))
    try:
        yield
    finally:
        _SERVERS.reset(token)


def make_emulation(fabric, options=None):
    """The builder scenarios use: Emulation on this machine, or ClusterEmulation inside on_servers."""
    servers = _SERVERS.get()
    if not servers:
        return Emulation(fabric, options)
    return ClusterEmulation(fabric, options, servers=servers)


class ClusterEmulation(Emulation):
    def __init__(self, fabric, options=None, run_id=None, servers=()):
        super().__init__(fabric, options, run_id)
        self.placement = place(fabric, list(servers))     # ParamError before anything exists
        self.servers = {name: Server.of(name) for name in self.placement.servers}
        if self.options.datapath not in (None, "netdev"):  # ParamError before anything exists
            raise ParamError(f"datapath={self.options.datapath}: servers run Open vSwitch's userspace "
                             "datapath (netdev) only")
        self.datapath = "netdev"      # the servers' own OVS: userspace
        self.controller = ClusterController(self.state, fabric, self.options.routing,
                                            next(iter(self.servers.values())))
        self.cut_links = len(self.placement.cut)
        self._owners = None

    def server_of(self, node: str) -> Server:
        return self.servers[self.placement.server_of(node)]

    def intf_owners(self) -> dict[str, str]:
        """Every interface of the fabric -> the node it belongs to."""
        if self._owners is None:
            self._owners = {i: n for l in self.fabric.links for n, i in ((l.a, l.a_intf), (l.b, l.b_intf))}
        return self._owners

    # ---- hooks of Emulation ----
    def preflight(self) -> None:
        super().preflight()
        for server in self.servers.values():
            if not sh.ok(server.ssh("sudo", "-n", "true"), timeout=20):
                raise ParamError(f"server {server.name} ({server.ip}): `ssh root@{server.ip} sudo true` "
                                 "fails; `hpn-testbed servers list` shows the local ones")

    def root_intfs(self) -> list[str]:
        return []          # nothing of the fabric is on this machine

    def local_bridges(self) -> list[str]:
        return []

    def start(self) -> None:
        self.state.data["servers"] = {}   # recorded before the servers get anything
        super().start()

    def make_watchdog(self):
        return ClusterWatchdog(self.controller, list(self.fabric.switches), self.controller.target,
                               list(self.servers.values()))

    def end_strays(self, net) -> None:
        for name, entry in self.state.data.get("servers", {}).items():
            cluster_parts.end_host_processes(self.servers[name], entry["hosts"])

    def remove_root_links(self) -> None:
        for name, entry in self.state.data.get("servers", {}).items():
            cluster_parts.delete_links(self.servers[name], entry["intfs"])

    # ---- steps ----
    def build_network(self) -> None:
        from mininet.log import setLogLevel
        from mininet.net import Mininet

        from testbed.emulation import cluster_nodes
        from testbed.emulation.hosts import FabricHost
        FabricHost.run_state = self.state
        switch_cls = cluster_nodes.switch_class(self.run_id, self.controller.target)
        setLogLevel("error")
        net = Mininet(topo=None, build=False, controller=None, autoSetMacs=False,
                      autoStaticArp=False, waitConnected=False)
        self.net = net
        record = self.state.data["servers"]
        for name, server in self.servers.items():
            record[name] = {"ip": server.ip, "ssh": server.ssh_base, "hosts": {}, "intfs": [],
                            "bridges": [n for n in self.placement.on(name) if n in self.fabric.switches]}
        for l in self.fabric.links:   # the switch ends, recorded before they exist
            for node, intf in ((l.a, l.a_intf), (l.b, l.b_intf)):
                if node in self.fabric.switches:
                    record[self.placement.server_of(node)]["intfs"].append(intf)
        self.state.save()
        for sw in self.fabric.switches.values():
            s = self.server_of(sw.name)
            net.addSwitch(sw.name, cls=switch_cls, dpid=f"{sw.dpid:016x}", protocols="OpenFlow15",
                          datapath="user", failMode="secure", server=s.name, serverIP=s.ip, user="root")
        for host in self.fabric.hosts.values():
            s = self.server_of(host.name)
            net.addHost(host.name, cls=cluster_nodes.ClusterHost, ip=None, server=s.name,
                        serverIP=s.ip, user="root")
        self.state.add_processes(*[(n.shell.pid, "ssh") for n in net.hosts + net.switches])
        for h in net.hosts:
            record[self.placement.server_of(h.name)]["hosts"][h.name] = h.pid
        self.state.save()
        for l in wiring.as_built(self.fabric, self.swaps):
            kwargs = {"port2": l.b_port, "intfName1": l.a_intf, "intfName2": l.b_intf,
                      "cls": cluster_nodes.RemoteVXLANLink}
            if l.a in self.fabric.switches:
                net.addLink(l.a, l.b, port1=l.a_port, **kwargs)
            else:
                nic = next(n for n in self.fabric.hosts[l.a].nics if l.a_intf in n.ports)
                net.addLink(l.a, l.b, port1=nic.index * len(nic.ports) + l.a_port, addr1=nic.mac, **kwargs)
        net.controllers.append(cluster_nodes.ControllerTarget(self.controller))
        net.nameToNode.setdefault(cluster_nodes.ControllerTarget.name, net.controllers[-1])   # the CLI asks for it
        net.build()
        self.controller.install_tls(self.servers.values())
        net.start()

    def announce(self, ports: set[str] | None = None) -> None:
        self.send_frames([line for h in self.fabric.hosts.values()
                          for line in hostnet.garp_lines(h, self.net[h.name].pid, ports)])

    def send_frames(self, lines: list[str]) -> None:
        """Each line goes to the server of the host (or switch) whose port it names."""
        owner = self.intf_owners()
        per_server: dict[str, list[str]] = {}
        for line in lines:
            per_server.setdefault(self.placement.server_of(owner[line.split()[1]]), []).append(line)
        for name, chunk in per_server.items():
            self.servers[name].run(cluster_parts.python_module("testbed.inhost.frames"),
                                   input="\n".join(chunk) + "\n", timeout=120)

    def ofctl(self, command: str, switch: str, *args: str) -> str:
        return self.switch_run(switch, shlex.join(["ovs-ofctl", "-O", "OpenFlow15", command, switch, *args]))

    def appctl(self, switch: str, *args: str) -> str:
        return self.switch_run(switch, shlex.join(["ovs-appctl", *args]))

    def switch_run(self, switch: str, script: str, input: str | None = None, timeout: float = 60) -> str:
        return self.server_of(switch).run(script, input=input, timeout=timeout)

    def carrier_follows(self, link) -> bool:
        return link not in self.placement.cut      # a cut link is a VXLAN device at each end

    def switches_batch(self, command: str, lines: dict[str, list[str]]) -> None:
        per_server: dict[Server, list[str]] = {}
        for switch, ls in lines.items():
            per_server.setdefault(self.server_of(switch), []).extend(ls)
        for server, ls in per_server.items():
            server.run(command, input="".join(line + "\n" for line in ls))

    def _intfs_by_server(self, intfs) -> dict[Server, list[str]]:
        owner = self.intf_owners()
        per_server: dict[Server, list[str]] = {}
        for intf in intfs:
            per_server.setdefault(self.server_of(owner[intf]), []).append(intf)
        return per_server

    def sampler(self, intfs, interval: float = 0.05, counter: str = "tx_bytes", queues: bool = True):
        from testbed.emulation.cluster_meters import RemoteSampler
        return RemoteSampler(self._intfs_by_server(intfs), interval, counter=counter, queues=queues)

    def counters(self, intfs, names=("tx_bytes",)) -> dict[str, tuple[int, ...]]:
        from testbed.emulation.cluster_meters import read_counters
        return read_counters(self._intfs_by_server(intfs), tuple(names))

    def placed_on(self) -> dict[str, str]:
        """Every node's hostname as its shell reports it: where it really runs."""
        return {n.name: n.cmd("hostname").strip() for n in self.net.hosts + self.net.switches}

    def describe(self) -> dict:
        info = super().describe()
        info["servers"] = {name: {"ip": s.ip, "switches": sum(1 for n in self.placement.on(name)
                                                               if n in self.fabric.switches),
                                  "hosts": sum(1 for n in self.placement.on(name) if n in self.fabric.hosts)}
                           for name, s in self.servers.items()}
        info["cut_links"] = self.cut_links
        if self.net is not None:
            info["hostnames"] = self.placed_on()
        return info

