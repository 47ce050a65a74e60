"""A fabric's veth pairs made in one kernel batch, and the Mininet link class that only records them.

Mininet makes each link with a round trip through a node's shell (`ip link add`), then
configures each end with more (`ifconfig` down, hw ether, up): some ten shell round trips per
cable, most of a small fabric's bring-up. Here every pair is made by one `ip -batch` in this
machine's root namespace: a host's end made in the host's namespace (`netns PID`) with its
NIC's MAC, every end at the fabric's MTU, the switches' ends set up; the host's end is set up
by its host script (hostnet.py), which sets its MAC again anyway. BatchedLink then creates
Mininet's Link and Intf objects (ports, names, the nodes' bookkeeping) without any command.
"""
from __future__ import annotations

from mininet.link import Intf, Link

from testbed.core import sh


class BatchedIntf(Intf):
    """An interface the batch made and configured: Mininet's bookkeeping only."""

    def config(self, mac=None, ip=None, ifconfig=None, up=True, **_params):
        self.mac = mac
        return {}


class BatchedLink(Link):
    """A Mininet Link over a veth pair that `veth_lines` already made."""

    def __init__(self, node1, node2, **params):
        params["intf"] = BatchedIntf      # Mininet.addLink passes its own default: not that one
        super().__init__(node1, node2, **params)

    @classmethod
    def makeIntfPair(cls, *args, **kwargs):   # made in the batch, before
        return None


def veth_lines(fabric, links, host_pids: dict[str, int], mtu: int) -> list[str]:
    """`ip -batch` lines making each link of `links` (the model's, as built) as a veth pair."""
    lines, up = [], []
    for link in links:
        if link.a in fabric.switches:
            first = f"name {link.a_intf}"
            up.append(link.a_intf)
        else:
            nic = next(n for n in fabric.hosts[link.a].nics if link.a_intf in n.ports)
            first = f"name {link.a_intf} address {nic.mac} netns {host_pids[link.a]}"
        lines.append(f"link add {first} mtu {mtu} type veth peer name {link.b_intf} mtu {mtu}")
        up.append(link.b_intf)
    return lines + [f"link set dev {name} up" for name in up]


def make_veths(fabric, links, host_pids: dict[str, int], mtu: int) -> None:
    """Make every pair in one process (the kernel's work, without a shell per link)."""
    sh.run("ip -batch -", input="\n".join(veth_lines(fabric, links, host_pids, mtu)) + "\n",
           timeout=60 + 0.05 * len(links))
