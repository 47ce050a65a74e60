"""The fabric model: pure data, built without root or Mininet.

A Fabric is switches, hosts (with NICs and their ports) and links. Every name, DPID, port
number, MAC and IP is derived from coordinates, so rules can be computed before anything exists.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict, deque
from dataclasses import dataclass, field

from testbed.core.errors import ParamError

GATEWAY_IP = "10.255.255.254"   # the virtual router every NIC routes through
GATEWAY_MAC = "02:fe:00:00:00:01"
IFNAMSIZ = 15                   # Linux interface names are at most 15 characters

# Tier of each switch role: 1 faces hosts, 2 aggregates, 3 is the core.
TIERS = {"tor": 1, "leaf": 1, "edge": 1, "agg": 2, "spine": 2, "core": 3}


@dataclass(frozen=True)
class Switch:
    name: str
    role: str                       # tor | agg | core | leaf | spine | edge
    coords: tuple[int, ...]         # where it sits, e.g. (pod, segment, rail, side)
    plane: int | None = None        # HPN plane / MPFT plane, None where planes do not apply
    pod: int | None = None

    @property
    def tier(self) -> int:
        return TIERS[self.role]

    @property
    def dpid(self) -> int:
        # role tier in the top byte, then one byte per coordinate: unique and readable in hex
        value = self.tier << 48 | (ord(self.role[0]) << 40)
        for i, c in enumerate(reversed(self.coords)):
            value |= (c & 0xFF) << (8 * i)
        return value


@dataclass(frozen=True)
class Nic:
    host: str
    index: int                      # NIC number on the host (= rail / plane)
    rail: int
    ip: str
    mac: str
    ports: tuple[str, ...]          # host-side interface names, one per NIC port

    @property
    def name(self) -> str:
        return f"{self.host}-n{self.index}"


@dataclass(frozen=True)
class Host:
    name: str
    coords: tuple[int, ...]
    nics: tuple[Nic, ...]
    pod: int | None = None


Port = tuple[str, int]   # (switch, OpenFlow port): one end of a cable, seen from its switch


@dataclass(frozen=True)
class Link:
    """One cable. End `a` is the lower tier (a host port or a switch), `b` the upper switch."""
    a: str          # node name (host or switch)
    a_port: int     # OpenFlow port on a switch; the NIC port index on a host
    b: str
    b_port: int
    gbps: float     # the paper's line rate; the emulator scales it
    a_intf: str
    b_intf: str


@dataclass
class Fabric:
    """A fabric, pure: switches (role, tier, coordinates, DPID), hosts with NICs and ports, and
    cables (Link), every name and address derived from coordinates; built by a family."""
    family: str
    params: object
    switches: dict[str, Switch] = field(default_factory=dict)
    hosts: dict[str, Host] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)
    _next_port: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    # tables derived from the cabling, built on first use and dropped when the cabling changes:
    # the controller asks for them once per NIC, which must not cost a pass over every link
    _derived: dict = field(default_factory=dict, repr=False, compare=False)

    def _table(self, name: str, build):
        if name not in self._derived:
            self._derived[name] = build()
        return self._derived[name]

    # ---- construction helpers used by the families ----
    def add_switch(self, name: str, role: str, coords: tuple[int, ...], plane=None, pod=None) -> str:
        self._derived.clear()
        self.switches[name] = Switch(name, role, tuple(coords), plane, pod)
        return name

    def add_host(self, name: str, coords: tuple[int, ...], nic_rails: list[int], ports_per_nic: int,
                 ip_of, pod=None) -> Host:
        nics = []
        for index, rail in enumerate(nic_rails):
            ip = ip_of(index)
            octets = [int(x) for x in ip.split(".")]
            mac = "02:00:" + ":".join(f"{o:02x}" for o in octets)   # the MAC spells the IP
            ports = tuple(f"{name}-n{index}p{p}" for p in range(ports_per_nic))
            nics.append(Nic(name, index, rail, ip, mac, ports))
        host = Host(name, tuple(coords), tuple(nics), pod)
        self.hosts[name] = host
        return host

    def connect(self, lower: str, upper: str, gbps: float) -> Link:
        """Cable switch `lower` to switch `upper`, each on its next free port."""
        a_port, b_port = self._take_port(lower), self._take_port(upper)
        self._derived.clear()
        link = Link(lower, a_port, upper, b_port, gbps, f"{lower}-eth{a_port}", f"{upper}-eth{b_port}")
        self.links.append(link)
        return link

    def attach(self, nic: Nic, port_index: int, switch: str, gbps: float) -> Link:
        """Cable port `port_index` of a host NIC to the next free port of `switch`."""
        b_port = self._take_port(switch)
        self._derived.clear()
        link = Link(nic.host, port_index, switch, b_port, gbps, nic.ports[port_index],
                    f"{switch}-eth{b_port}")
        self.links.append(link)
        return link

    def _take_port(self, switch: str) -> int:
        self._next_port[switch] += 1
        return self._next_port[switch]

    # ---- queries ----
    def nics(self) -> list[Nic]:
        return [nic for host in self.hosts.values() for nic in host.nics]

    def nic(self, ref: str) -> Nic:
        """A NIC by IP, by name (`host-nI`) or by host name (its first NIC)."""
        for nic in self.nics():
            if ref in (nic.ip, nic.name):
                return nic
        if ref in self.hosts:
            return self.hosts[ref].nics[0]
        raise ParamError(f"no NIC or host named {ref!r} in this {self.family} fabric")

    def ports_of(self, switch: str) -> int:
        return self._next_port[switch]

    def attachments(self, nic: Nic) -> list[Port]:
        """(switch, port) pairs where the NIC's ports are cabled."""
        by_intf = self._table("attachments", lambda: {l.a_intf: (l.b, l.b_port) for l in self.host_links()})
        return [by_intf[p] for p in nic.ports]

    def host_link(self, port: str) -> Link:
        """The cable of a host NIC port, by the port's interface name."""
        link = self._table("host_link", lambda: {l.a_intf: l for l in self.host_links()}).get(port)
        if link is None:
            raise ParamError(f"no host port {port!r} in this {self.family} fabric")
        return link

    def switch_links(self) -> list[Link]:
        return [l for l in self.links if l.a in self.switches]

    def host_links(self) -> list[Link]:
        return [l for l in self.links if l.a not in self.switches]

    def line_mbit(self, owner: str | Nic) -> float:
        """Emulated line rate (Mbit/s: the paper's Gb/s times `scale`) of a NIC's ports, or of
        every port of a host given by name."""
        ports = owner.ports if isinstance(owner, Nic) else \
            [p for nic in self.hosts[owner].nics for p in nic.ports]
        return sum(self.link_mbit(l) for l in self.host_links() if l.a_intf in ports)

    def link_mbit(self, link: Link) -> float:
        """Emulated rate of one cable (Mbit/s): the paper's Gb/s times `scale`."""
        return link.gbps * self.params.scale

    def adjacency(self) -> dict[str, list[tuple[int, str, int]]]:
        """switch -> [(local port, neighbour switch, neighbour port)] over switch-to-switch links
        (shared: do not modify)."""
        def build():
            adj: dict[str, list[tuple[int, str, int]]] = defaultdict(list)
            for l in self.switch_links():
                adj[l.a].append((l.a_port, l.b, l.b_port))
                adj[l.b].append((l.b_port, l.a, l.a_port))
            return adj
        return self._table("adjacency", build)

    def port_peer(self) -> dict[Port, tuple[str, int]]:
        """(switch, port) -> (node, port) at the other end of the cable (shared: do not modify)."""
        def build():
            peer = {}
            for l in self.links:
                peer[(l.b, l.b_port)] = (l.a, l.a_port)
                if l.a in self.switches:
                    peer[(l.a, l.a_port)] = (l.b, l.b_port)
            return peer
        return self._table("port_peer", build)

    def equal_cost_paths(self, src: Nic, dst: Nic) -> int:
        """Number of shortest switch paths from any port of `src` to any port of `dst`."""
        starts = [sw for sw, _ in self.attachments(src)]
        goals = {sw for sw, _ in self.attachments(dst)}
        adj = self.adjacency()
        dist: dict[str, int] = {}
        count: dict[str, int] = defaultdict(int)
        queue = deque()
        for sw in starts:
            if sw not in dist:
                dist[sw] = 0
                queue.append(sw)
            count[sw] += 1
        while queue:
            sw = queue.popleft()
            for _, nbr, _ in adj[sw]:
                if nbr not in dist:
                    dist[nbr] = dist[sw] + 1
                    queue.append(nbr)
                if dist[nbr] == dist[sw] + 1:
                    count[nbr] += count[sw]
        reached = [g for g in goals if g in dist]
        if not reached:
            return 0
        best = min(dist[g] for g in reached)
        return sum(count[g] for g in reached if dist[g] == best)

    def reachable(self, src: Nic, dst: Nic) -> bool:
        return self.equal_cost_paths(src, dst) > 0

    def parts(self) -> dict[str, int]:
        """switch -> the number of the connected part of the switches it belongs to (shared)."""
        def build():
            part: dict[str, int] = {}
            adjacency = self.adjacency()
            for number, start in enumerate(s for s in self.switches if s not in part):
                part[start], todo = number, [start]
                while todo:
                    for _, neighbour, _ in adjacency.get(todo.pop(), ()):
                        if neighbour not in part:
                            part[neighbour] = number
                            todo.append(neighbour)
            return part
        return self._table("parts", build)

    def routed_pairs(self, hosts: list[str] | None = None) -> list[tuple[Nic, Nic]]:
        """Every (src, dst) pair of NICs on different hosts among `hosts` (default all) that the
        cabling joins (as `reachable`: cabled to one connected part of the switches), in NIC
        order. Found once per NIC rather than by a path search per pair: large fabrics stay fast."""
        part = self.parts()
        parts = {n.name: {part[sw] for sw, _ in self.attachments(n)} for n in self.nics()}
        names = hosts or list(self.hosts)
        return [(src, dst) for src in (n for h in names for n in self.hosts[h].nics)
                for dst in (n for h in names if h != src.host for n in self.hosts[h].nics)
                if parts[src.name] & parts[dst.name]]

    def summary(self) -> dict:
        """Counts per tier and oversubscription per tier, for `topo show`. A cable between two
        switches of one tier (a topology file may have one) is neither up nor down: it is
        counted as `peer_gbps` of both, outside the oversubscription."""
        down: dict[str, float] = defaultdict(float)
        up: dict[str, float] = defaultdict(float)
        peer: dict[str, float] = defaultdict(float)
        sw = self.switches
        for l in self.links:   # one pass: summaries of paper-scale fabrics stay fast
            if l.a in sw and l.b in sw and sw[l.a].tier == sw[l.b].tier:
                peer[l.a] += l.gbps
                peer[l.b] += l.gbps
                continue
            down[l.b] += l.gbps
            up[l.a] += l.gbps
        tiers: dict[str, dict] = {}
        for role in dict.fromkeys(s.role for s in self.switches.values()):
            members = [s.name for s in self.switches.values() if s.role == role]
            d, u = sum(down[m] for m in members), sum(up[m] for m in members)
            tiers[role] = {
                "switches": len(members),
                "ports_per_switch": max(self.ports_of(m) for m in members),
                "down_gbps": round(d, 3), "up_gbps": round(u, 3),
                "oversubscription": round(d / u, 3) if u else None,
                "peer_gbps": round(sum(peer[m] for m in members), 3),
            }
        nics = self.nics()
        return {
            "family": self.family,
            "params": dataclasses.asdict(self.params),
            "hosts": len(self.hosts),
            "nics": len(nics),
            "host_ports": sum(len(n.ports) for n in nics),
            "switches": len(self.switches),
            "links": {"host": len(self.host_links()), "switch": len(self.switch_links())},
            "tiers": tiers,
        }

    def validate(self, emulated: bool = True) -> None:
        """Checks every family shares: the radix, and (to be emulated) interface-name length."""
        radix = self.params.radix
        for name in self.switches:
            if self.ports_of(name) > radix:
                raise ParamError(
                    f"radix={radix}: switch {name} ({self.switches[name].role}) needs "
                    f"{self.ports_of(name)} ports; raise radix or reduce the fan-out")
        for l in self.links if emulated else ():
            for intf in (l.a_intf, l.b_intf):
                if len(intf) > IFNAMSIZ:
                    raise ParamError(f"interface name {intf!r} is longer than {IFNAMSIZ} "
                                     "characters: use fewer pods, segments or hosts")
        if emulated:
            self._check_dpids()

    def _check_dpids(self) -> None:
        """Open vSwitch tells bridges apart by DPID, which keeps one byte per coordinate."""
        seen: dict[int, str] = {}
        for name, sw in self.switches.items():
            if sw.dpid in seen:
                raise ParamError(f"switches {seen[sw.dpid]} and {name} would share DPID "
                                 f"{sw.dpid:#x}: at most 256 switches along each coordinate")
            seen[sw.dpid] = name
