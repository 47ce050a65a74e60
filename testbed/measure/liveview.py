"""What `hpn-testbed top` shows of a running fabric: each cable's load in both directions and
its queue, the faults in place and the flows, from two samples of the switch ports' counters.

Pure where it can be: `Sample` is what one read of the machine gives (counters, queues, which
ports are down, the hosts' connections), `view(fabric, before, after)` turns two samples into a
`View`, and `View.as_dict()` is what the terminal and the web page both draw. `read()` is the one
function that touches the machine (sysfs, netlink, /proc), all of it this run's own.

Directions follow the cable's ends (Link: `a` is the lower tier): "up" is what `a` sends to `b`.
A switch cable's two ends are both switch ports in the root namespace: up is the lower port's
tx_bytes, down the upper's. A host cable's host end sits in the host's namespace, so both
directions are read on its switch end: up is what that port received, down what it sent.
"""
from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field

from testbed.model.fabric import Fabric, Link


@dataclass(frozen=True)
class Sample:
    """One read: per root-namespace switch port (tx_bytes, rx_bytes, queued bytes), the ports
    whose carrier is down, the run's nft tables (its one-direction faults) and the hosts'
    established connections ("src:port -> dst:port")."""
    t: float
    counters: dict[str, tuple[int, int, int]]
    down: frozenset[str] = frozenset()
    nft_tables: tuple[str, ...] = ()
    flows: tuple[str, ...] = ()


@dataclass(frozen=True)
class CableLoad:
    name: str                 # "a:a_port-b:b_port"
    a: str
    b: str
    up_mbps: float
    down_mbps: float
    capacity_mbps: float
    queue_bytes: int
    down: bool                # either end's carrier is down

    @property
    def load(self) -> float:
        """The busier direction as a fraction of the cable's emulated rate."""
        return max(self.up_mbps, self.down_mbps) / self.capacity_mbps if self.capacity_mbps else 0.0


@dataclass
class View:
    run: str
    family: str
    switches: dict[str, tuple[int, int]]      # name -> (tier, index within its tier): the drawing
    hosts: list[str]
    cables: list[CableLoad] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    flows: list[str] = field(default_factory=list)
    updated: float = 0.0

    def busiest(self, n: int) -> list[CableLoad]:
        return sorted(self.cables, key=lambda c: (-c.load, c.name))[:n]

    def as_dict(self) -> dict:
        return {"run": self.run, "family": self.family, "updated": self.updated,
                "switches": [{"name": s, "tier": t, "index": i} for s, (t, i) in self.switches.items()],
                "hosts": self.hosts, "faults": self.faults, "flows": self.flows,
                "cables": [{"name": c.name, "a": c.a, "b": c.b, "up_mbps": round(c.up_mbps, 3),
                            "down_mbps": round(c.down_mbps, 3), "capacity_mbps": c.capacity_mbps,
                            "load": round(c.load, 4), "queue_bytes": c.queue_bytes, "down": c.down}
                           for c in self.cables]}


def cable_ports(fabric: Fabric, link: Link) -> tuple[str, int, str, int]:
    """(port, counter index) for the up direction and for the down one: counter index 0 is
    tx_bytes, 1 rx_bytes (see the module's docstring)."""
    if link.a in fabric.switches:
        return link.a_intf, 0, link.b_intf, 0
    return link.b_intf, 1, link.b_intf, 0


def ports(fabric: Fabric) -> list[str]:
    """Every root-namespace port the view reads."""
    seen: dict[str, None] = {}
    for link in fabric.links:
        up, _, dn, _ = cable_ports(fabric, link)
        seen.update({up: None, dn: None})
    return list(seen)


def layout(fabric: Fabric) -> dict[str, tuple[int, int]]:
    """Each switch's tier and its place in that tier's row, in the fabric's own order."""
    rows: dict[int, int] = {}
    placed = {}
    for name, sw in fabric.switches.items():
        placed[name] = (sw.tier, rows.get(sw.tier, 0))
        rows[sw.tier] = rows.get(sw.tier, 0) + 1
    return placed


def rate(before: Sample, after: Sample, port: str, index: int) -> float:
    """Mbit/s over the two samples (0 when a port is missing or its counter went back)."""
    dt = after.t - before.t
    if dt <= 0 or port not in before.counters or port not in after.counters:
        return 0.0
    delta = after.counters[port][index] - before.counters[port][index]
    return max(delta, 0) * 8 / 1e6 / dt


def view(run: str, fabric: Fabric, before: Sample, after: Sample) -> View:
    """The View between two samples."""
    v = View(run, fabric.family, layout(fabric), list(fabric.hosts), updated=after.t)
    for link in fabric.links:
        up, ui, dn, di = cable_ports(fabric, link)
        queue = max(after.counters.get(p, (0, 0, 0))[2] for p in {up, dn})
        down = bool({link.a_intf, link.b_intf} & after.down)
        v.cables.append(CableLoad(f"{link.a}:{link.a_port}-{link.b}:{link.b_port}", link.a, link.b,
                                  rate(before, after, up, ui), rate(before, after, dn, di),
                                  fabric.link_mbit(link), queue, down))
    v.faults = [f"{c.name} down" for c in v.cables if c.down] + \
        [f"one-direction fault: nft table {t}" for t in after.nft_tables]
    v.flows = list(after.flows)
    return v


# --- reading the machine ------------------------------------------------------------------

def read(fabric: Fabric, host_pids: dict[str, int], nft_tables: list[str], ipr=None) -> Sample:
    """One Sample of this machine: counters from sysfs, queues from netlink (`ipr`, an open
    pyroute2 IPRoute; none: no queues), carriers from sysfs, connections from each host's
    /proc/PID/net/tcp (its namespace's sockets, read through the PID holding it)."""
    from testbed.inhost.ports import SYSFS, backlog
    from testbed.inhost.ports import read as read_counters
    names = ports(fabric)
    present = [p for p in names if (SYSFS / p).exists()]
    counters = read_counters(present, ("tx_bytes", "rx_bytes"))
    queues = {}
    if ipr is not None:
        for p in present:
            index = ipr.link_lookup(ifname=p)
            queues[p] = backlog(ipr, index[0]) if index else 0
    # a port downed by a fault, or whose peer was (a veth then says "lowerlayerdown")
    down = set(names) - set(present)
    down |= {p for p in present if operstate(p) in DOWN_STATES}
    return Sample(time.monotonic(), {p: (*counters[p], queues.get(p, 0)) for p in present},
                  frozenset(down), tuple(nft_tables), tuple(connections(host_pids)))


DOWN_STATES = ("down", "lowerlayerdown", "notpresent")


def operstate(port: str) -> str:
    from testbed.inhost.ports import SYSFS
    try:
        return (SYSFS / port / "operstate").read_text().strip()
    except OSError:                 # gone between the listing and the read
        return "notpresent"


def connections(host_pids: dict[str, int]) -> list[str]:
    """Each host's established TCP connections, "host: src:port -> dst:port", once per socket.
    (/proc/PID/net/tcp lists the sockets of the namespace PID is in; state 01 is ESTABLISHED.)"""
    found = []
    for host, pid in sorted(host_pids.items()):
        try:
            lines = open(f"/proc/{pid}/net/tcp").read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 3 and cols[3] == "01":
                found.append(f"{host}: {address(cols[1])} -> {address(cols[2])}")
    return found


def address(hexed: str) -> str:
    """/proc/net/tcp's "0100000A:1F90" -> "10.0.0.1:8080" (the kernel prints the address as a
    number in this machine's byte order)."""
    ip, port = hexed.split(":")
    return f"{socket.inet_ntoa(struct.pack('=I', int(ip, 16)))}:{int(port, 16)}"
