"""Mininet Cluster Edition's remote nodes and links, with the overrides cluster.py explains
(nodes.py has their counterparts on this machine)."""
from __future__ import annotations

import itertools
import shlex
import subprocess
from itertools import groupby
from operator import attrgetter

from mininet.examples.cluster import RemoteLink, RemoteMixin, RemoteOVSSwitch
from mininet.link import Link

from testbed.emulation.cluster.parts import Server
from testbed.emulation.hosts import FabricHost
from testbed.emulation.net import netdevs
from testbed.emulation.nodes import INACTIVITY_PROBE_MS, ControllerRef

VXLAN_PORT = 4789
FABRIC_MTU = 1500


class RemoteNodeFixes:
    """Our ssh (options per server), quoted arguments, no inherited stdin, no local moves."""

    def __init__(self, name, server=None, serverIP=None, **kwargs):
        self.sshbase = ["ssh", *Server.of(server).ssh_options, "-q", "-o", "BatchMode=yes", "-tt"]
        super().__init__(name, server=server, serverIP=serverIP, **kwargs)

    def _popen(self, cmd, sudo=True, tt=True, **params):
        if self.isRemote:
            cmd = cmd.split() if isinstance(cmd, str) else cmd
            cmd = [shlex.quote(str(c)) for c in cmd]
            params.setdefault("stdin", subprocess.DEVNULL)
        return super()._popen(cmd, sudo=sudo, tt=tt, **params)

    def addIntf(self, intf, port=None, moveIntfFn=None):
        # made in its namespace already (veth peer netns PID, or moved by the VXLAN link)
        return super().addIntf(intf, port=port, moveIntfFn=lambda *_args, **_kw: True)


class ClusterHost(RemoteNodeFixes, RemoteMixin, FabricHost):
    pass


def switch_class(run_id: str, target: str):
    class ClusterSwitch(RemoteNodeFixes, RemoteOVSSwitch):
        def bridgeOpts(self):
            return super().bridgeOpts() + f" external-ids:{netdevs.OVS_TAG}={run_id}"

        def vsctl(self, *args, **kwargs):
            ours = f'{target}\\" inactivity_probe={INACTIVITY_PROBE_MS}'
            return super().vsctl(*[str(a).replace(f'{target}\\"', ours) for a in args], **kwargs)

        @classmethod
        def batchStartup(cls, switches, **_kwargs):
            """Per server, one ovs-vsctl on bash's standard input (a pty cuts it, mininet#916)."""
            key = attrgetter("server")
            for server, group in groupby(sorted(switches, key=key), key):
                group = tuple(group)
                script = "ovs-vsctl --timeout=60 " + " ".join(c.strip() for s in group for c in s.commands)
                Server.of(server).run("bash -s", input=script + "\n", timeout=120)
                for s in group:
                    s.commands, s.batch = [], False
            return switches

    return ClusterSwitch


class ControllerTarget(ControllerRef):
    """What OVSSwitch.start needs to write a controller target PROTOCOL:IP:PORT."""

    def __init__(self, controller):
        self.protocol, ip_port = controller.target.split(":", 1)
        self.ip, port = ip_port.rsplit(":", 1)
        self.port = int(port)

    def IP(self):
        return self.ip


_VNI = itertools.count(1)


class RemoteVXLANLink(RemoteLink):
    """Same-server links are veths; a cut link is a VXLAN device on each server (like
    RemoteGRELink's gretap: this kernel has no GRE), one VNI per link."""

    def makeIntfPair(self, intfname1, intfname2, addr1=None, addr2=None, node1=None, node2=None,
                     deleteIntfs=True):
        node1 = self.node1 if node1 is None else node1
        node2 = self.node2 if node2 is None else node2
        if node1.server == node2.server:
            return Link.makeIntfPair(intfname1, intfname2, addr1, addr2, node1, node2,
                                     deleteIntfs=deleteIntfs)
        vni = next(_VNI)
        for node, intf, addr, peer in ((node1, intfname1, addr1, node2), (node2, intfname2, addr2, node1)):
            if node.inNamespace:
                raise ValueError(f"{node}: a cut link must join two switches, not a host")
            mac = f" address {addr}" if addr else ""
            Server.of(node.server).run(
                f"ip link del {intf} 2>/dev/null || true\n"
                f"ip link add {intf}{mac} mtu {FABRIC_MTU} type vxlan id {vni} local {node.serverIP} "
                f"remote {peer.serverIP} dstport {VXLAN_PORT} nolearning\n"
                f"ethtool -K {intf} tx off rx off tso off gso off gro off >/dev/null 2>&1 || true\n"
                f"ip link set {intf} up")
        self.tunnel = True
        return None

    def stop(self):
        if self.tunnel:
            self.intf1.delete()
            self.intf2.delete()
        else:
            Link.stop(self)
        self.tunnel = None
