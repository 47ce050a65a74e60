"""One fabric across several servers, on Mininet Cluster Edition (mininet/examples/cluster.py).

    fab = make_fabric("hpn")
    with Emulation(fab, site=ClusterSite(fab, ["hpn-srv1", "hpn-srv2"])) as emu: ...

ClusterSite is where such a fabric runs (the counterpart of site.LocalSite, same questions).

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

import shlex

from testbed.core import sh
from testbed.core.errors import ParamError
from testbed.emulation.cluster import meters as cluster_meters
from testbed.emulation.cluster import nodes as cluster_nodes
from testbed.emulation.cluster import parts as cluster_parts
from testbed.emulation.cluster.parts import ClusterController, ClusterWatchdog, Server
from testbed.emulation.net import system
from testbed.model.fabric import Fabric
from testbed.model.placement import place


class ClusterSite:
    """Servers: each holds the switches and hosts the placement gives it, in its own Open
    vSwitch and namespaces; a cable between two servers is a VXLAN device at each end."""
    host_class, link_class = cluster_nodes.ClusterHost, cluster_nodes.RemoteVXLANLink
    node_workers = 1        # one by one: a remote node's start is its own ssh session

    def __init__(self, fabric: Fabric, servers):
        self.fabric = fabric
        self.placement = place(fabric, list(servers))     # ParamError before anything exists
        self.servers = {name: Server.of(name) for name in self.placement.servers}
        self.owners = {i: n for l in fabric.links for n, i in ((l.a, l.a_intf), (l.b, l.b_intf))}

    def server_of(self, node: str) -> Server:
        return self.servers[self.placement.server_of(node)]

    # ---- before anything exists ----
    def datapath(self, asked: str | None) -> str:
        if asked not in (None, "netdev"):
            raise ParamError(f"datapath={asked}: servers run Open vSwitch's userspace "
                             "datapath (netdev) only")
        return "netdev"

    def mtu(self, asked: int | None) -> int:
        """The servers' fabrics stay at 1500 bytes (their VXLAN cables: cluster_nodes.FABRIC_MTU)."""
        value = asked or system.mtu(default=cluster_nodes.FABRIC_MTU)
        if value != cluster_nodes.FABRIC_MTU:
            raise ParamError(f"mtu={value}: a fabric on servers runs at {cluster_nodes.FABRIC_MTU} "
                             "bytes (its VXLAN cables; HPN_MTU unset or 1500)")
        return value

    def make_controller(self, state, routing: dict, app=None) -> ClusterController:
        if app is not None:
            raise ParamError(f"--controller-app {app.label}: not with --servers yet (a user's app runs "
                             "on this machine only)")
        return ClusterController(state, self.fabric, routing, next(iter(self.servers.values())))

    def root_intfs(self) -> list[str]:
        return []          # nothing of the fabric is on this machine

    def preflight(self) -> None:
        for server in self.servers.values():
            if not sh.ok(server.ssh("sudo", "-n", "true"), timeout=20):
                raise ParamError(f"server {server.name} ({server.ip}): `ssh root@{server.ip} sudo true` "
                                 "fails; `hpn-testbed servers list` shows the local ones")

    def record(self, state) -> None:
        """Each server's bridges and switch-side interfaces, before they exist (`clean` reads them)."""
        record = {name: {"ip": s.ip, "ssh": s.ssh_base, "hosts": {}, "intfs": [],
                         "bridges": [n for n in self.placement.on(name) if n in self.fabric.switches]}
                  for name, s in self.servers.items()}
        for l in self.fabric.links:
            for node, intf in ((l.a, l.a_intf), (l.b, l.b_intf)):
                if node in self.fabric.switches:
                    record[self.placement.server_of(node)]["intfs"].append(intf)
        state.data["servers"] = record
        state.save()

    # ---- what build_network asks ----
    def switch_class(self, run_id: str, controller):
        return cluster_nodes.switch_class(run_id, controller.target)

    def switch_options(self, switch: str, datapath: str) -> dict:
        return {"datapath": "user", **self.host_options(switch)}

    def host_options(self, host: str) -> dict:
        """A node's server, for MCE's RemoteMixin (a switch's too)."""
        s = self.server_of(host)
        return {"server": s.name, "serverIP": s.ip, "user": "root"}

    def controller_ref(self, controller) -> cluster_nodes.ControllerTarget:
        return cluster_nodes.ControllerTarget(controller)

    def record_nodes(self, net, state) -> None:
        """The nodes' ssh clients (local PIDs) and the hosts' PIDs on their servers."""
        state.add_processes(*[(n.shell.pid, "ssh") for n in net.hosts + net.switches])
        for h in net.hosts:
            state.data["servers"][self.placement.server_of(h.name)]["hosts"][h.name] = h.pid
        state.save()

    def make_links(self, built, host_pids: dict[str, int], mtu: int) -> None:
        """Nothing before Mininet: its link class makes each link on its servers."""

    def built(self, net, controller) -> None:
        controller.install_tls(self.servers.values())

    def make_watchdog(self, controller) -> ClusterWatchdog:
        return ClusterWatchdog(controller, list(self.fabric.switches), controller.target,
                               list(self.servers.values()))

    # ---- the switches' side, on their servers ----
    def switch_run(self, switch: str, script: str, input: str | None = None, timeout: float = 60) -> str:
        return self.server_of(switch).run(script, input=input, timeout=timeout)

    def switches_batch(self, command: str, lines: dict[str, list[str]]) -> None:
        per_server: dict[Server, list[str]] = {}
        for switch, ls in lines.items():
            per_server.setdefault(self.server_of(switch), []).extend(ls)
        for server, ls in per_server.items():
            server.run(command, input="".join(line + "\n" for line in ls))

    def ofctl(self, command: str, switch: str, *args: str) -> str:
        return self.switch_run(switch, shlex.join(["ovs-ofctl", "-O", "OpenFlow15", command, switch, *args]))

    def appctl(self, switch: str, *args: str) -> str:
        return self.switch_run(switch, shlex.join(["ovs-appctl", *args]))

    def send_frames(self, lines: list[str]) -> None:
        """Each line goes to the server of the host (or switch) whose port it names."""
        per_server: dict[str, list[str]] = {}
        for line in lines:
            per_server.setdefault(self.placement.server_of(self.owners[line.split()[1]]), []).append(line)
        for name, chunk in per_server.items():
            self.servers[name].run(cluster_parts.python_module("testbed.inhost.frames"),
                                   input="\n".join(chunk) + "\n", timeout=120)

    def carrier_follows(self, link) -> bool:
        return link not in self.placement.cut      # a cut link is a VXLAN device at each end

    def intfs_by_server(self, intfs) -> dict[Server, list[str]]:
        per_server: dict[Server, list[str]] = {}
        for intf in intfs:
            per_server.setdefault(self.server_of(self.owners[intf]), []).append(intf)
        return per_server

    def sampler(self, intfs, interval: float = 0.05, counter: str = "tx_bytes", queues: bool = True):
        return cluster_meters.RemoteSampler(self.intfs_by_server(intfs), interval, counter=counter,
                                            queues=queues)

    def counters(self, intfs, names=("tx_bytes",)) -> dict[str, tuple[int, ...]]:
        return cluster_meters.read_counters(self.intfs_by_server(intfs), tuple(names))

    def describe(self, net) -> dict:
        on = self.placement.on
        info = {"servers": {name: {"ip": s.ip,
                                   "switches": sum(1 for n in on(name) if n in self.fabric.switches),
                                   "hosts": sum(1 for n in on(name) if n in self.fabric.hosts)}
                            for name, s in self.servers.items()},
                "cut_links": len(self.placement.cut)}
        if net is not None:   # every node's hostname as its shell reports it: where it really runs
            info["hostnames"] = {n.name: n.cmd("hostname").strip() for n in net.hosts + net.switches}
        return info

    # ---- teardown ----
    def end_strays(self, net, state) -> None:
        for name, entry in state.data.get("servers", {}).items():
            cluster_parts.end_host_processes(self.servers[name], entry["hosts"])

    def when_ready(self, state, datapath: str, queue_bytes: int) -> None:
        """Nothing: the servers' Open vSwitch keeps its own send buffer."""

    def before_bridges_go(self, state) -> None:
        """Nothing: the bridges are on the servers, and this machine's settings stay as they are."""

    def remove_links(self, state) -> None:
        for name, entry in state.data.get("servers", {}).items():
            cluster_parts.delete_links(self.servers[name], entry["intfs"])
