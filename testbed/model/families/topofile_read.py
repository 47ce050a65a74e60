"""A topology file (TOML) read and checked, pure: switches, hosts with NICs and ports, cables.

Everything is checked before a Fabric is built, and every problem is one line naming the file and
the entry (`fab.toml: [[cable]] 3: b: no switch or host port 'x'`): unknown keys and roles, a tier
that is not its role's, duplicate names, dangling cables, a host port cabled twice or not at all,
ports over the radix, and hosts that reach no other host. All problems are reported together,
one line each (ParamError). The format is in docs/extending.md; examples/three-tier.toml is one.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from testbed.core import files
from testbed.core.errors import ParamError
from testbed.model.fabric import TIERS
from testbed.model.params import HOSTS_PER_OCTET, IP_OCTET

TOP_KEYS = ("name", "description", "radix", "gbps", "switch", "host", "cable")
SWITCH_KEYS = ("name", "role", "tier", "plane", "rail", "pod")
HOST_KEYS = ("name", "nics", "ports", "rails")
CABLE_KEYS = ("a", "b", "gbps")
NAME = re.compile(r"^[a-z][a-z0-9]*$")        # interface names are NAME-ethN, NAME-nIpJ
MAX_HOSTS = HOSTS_PER_OCTET * IP_OCTET         # 10.nic.(h // 250).(h % 250 + 1)
MAX_TITLE = 200                                  # characters of a topology's display name


@dataclass(frozen=True)
class SwitchEntry:
    name: str
    role: str
    plane: int | None
    rail: int | None
    pod: int | None


@dataclass(frozen=True)
class HostEntry:
    name: str
    rails: tuple[int, ...]      # one per NIC
    ports: int                  # per NIC


@dataclass(frozen=True)
class Cable:
    a: tuple[str, int | None, int | None]     # (node, NIC, port): NIC and port None on a switch
    b: tuple[str, int | None, int | None]
    gbps: float


@dataclass(frozen=True)
class Topology:
    path: str
    name: str
    radix: int | None
    switches: tuple[SwitchEntry, ...]
    hosts: tuple[HostEntry, ...]
    cables: tuple[Cable, ...]


class Problems:
    """The problems found so far, each one line `FILE: WHERE: problem`."""

    def __init__(self, path: str):
        self.path, self.lines = path, []

    def add(self, where: str, problem: str) -> None:
        self.lines.append(f"{self.path}: {where + ': ' if where else ''}{problem}")

    def raise_any(self) -> None:
        if self.lines:
            raise ParamError("\n".join(self.lines))


def read(path: str, radix: int = 64) -> Topology:
    """The topology of `path`, checked; ParamError with one line per problem. `radix` is the
    ports per switch unless the file sets its own."""
    text = files.read_text(path, "topology file", files.EXPERIMENT_MAX)
    data = files.parse_toml(text, path)
    problems = Problems(path)
    keys(problems, "", data, TOP_KEYS)
    own_radix = number(problems, "", data, "radix", int, None, (2, 65280))
    gbps = number(problems, "", data, "gbps", float, 100.0, (0.001, 51200))
    title = data.get("name", path)
    if not isinstance(title, str) or not title.isprintable() or len(title) > MAX_TITLE:
        problems.add("", f"name: {str(title)[:40]!r}: a printable string of at most {MAX_TITLE} "
                         "characters")
    switches = [switch(problems, f"[[switch]] {i}", s)
                for i, s in enumerate(tables(problems, data, "switch"), 1)]
    hosts = [host(problems, f"[[host]] {i}", h) for i, h in enumerate(tables(problems, data, "host"), 1)]
    unnamed = None in switches or None in hosts     # cables naming them would only dangle
    switches, hosts = [s for s in switches if s], [h for h in hosts if h]
    unique_names(problems, switches, hosts)
    if not switches or not hosts:
        problems.add("", "a topology needs at least one [[switch]] and one [[host]]")
    if len(hosts) > MAX_HOSTS:
        problems.add("", f"{len(hosts)} hosts: at most {MAX_HOSTS} (the last two octets of an IP)")
    if unnamed or not switches or not hosts:
        problems.raise_any()
    nodes = {**{s.name: s for s in switches}, **{h.name: h for h in hosts}}
    cables = [cable(problems, f"[[cable]] {i}", c, nodes, gbps)
              for i, c in enumerate(tables(problems, data, "cable"), 1)]
    topo = Topology(path, str(title), own_radix, tuple(switches), tuple(hosts),
                    tuple(c for c in cables if c))
    problems.raise_any()
    check_ports(problems, topo, topo.radix or radix)
    problems.raise_any()
    return topo


def keys(problems: Problems, where: str, data: dict, allowed) -> None:
    for key in data:
        if key not in allowed:
            problems.add(where, f"{key}: unknown key; known: {', '.join(allowed)}")


def number(problems, where, data, key, kind, default, bounds):
    value = data.get(key, default)
    if value is None:
        return None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        problems.add(where, f"{key}: expected {kind.__name__}, got {value!r}")
        return default
    if not bounds[0] <= value <= bounds[1]:
        problems.add(where, f"{key}: {value} must be between {bounds[0]} and {bounds[1]}")
        return default
    return value


def tables(problems: Problems, data: dict, key: str) -> list[dict]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        problems.add("", f"{key}: expected [[{key}]] tables")
        return []
    return value


def named(problems: Problems, where: str, data: dict) -> str | None:
    name = data.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        problems.add(where, f"name: {name!r}: a lower-case letter, then letters and digits "
                            "(it names interfaces)")
        return None
    return name


def switch(problems: Problems, where: str, data: dict) -> SwitchEntry | None:
    keys(problems, where, data, SWITCH_KEYS)
    name, role = named(problems, where, data), data.get("role")
    if not isinstance(role, str) or role not in TIERS:
        problems.add(where, f"role: {role!r}: choose from {', '.join(TIERS)}")
        return None
    tier = number(problems, where, data, "tier", int, TIERS[role], (1, 3))
    if tier != TIERS[role]:
        problems.add(where, f"tier: {tier}: a {role} is tier {TIERS[role]}")
    plane, rail, pod = (number(problems, where, data, k, int, None, (0, IP_OCTET - 1))
                        for k in ("plane", "rail", "pod"))
    return SwitchEntry(name, role, plane, rail, pod) if name else None


def host(problems: Problems, where: str, data: dict) -> HostEntry | None:
    keys(problems, where, data, HOST_KEYS)
    name = named(problems, where, data)
    nics = number(problems, where, data, "nics", int, 1, (1, IP_OCTET - 1))
    ports = number(problems, where, data, "ports", int, 1, (1, 8))
    rails = data.get("rails", list(range(nics)))
    if not (isinstance(rails, list) and len(rails) == nics
            and all(isinstance(r, int) and not isinstance(r, bool) and 0 <= r < IP_OCTET for r in rails)):
        problems.add(where, f"rails: {rails!r}: one rail (0..{IP_OCTET - 1}) per NIC ({nics})")
        return None
    return HostEntry(name, tuple(rails), ports) if name else None


def unique_names(problems: Problems, switches, hosts) -> None:
    seen: set[str] = set()
    for kind, entry in [*(("switch", s) for s in switches), *(("host", h) for h in hosts)]:
        if entry.name in seen:
            problems.add(f"[[{kind}]] {entry.name}",
                         "name: used twice (switch and host names are one namespace)")
        seen.add(entry.name)


PORT = re.compile(r"^([a-z][a-z0-9]*)(?:-n(\d+)(?:p(\d+))?)?$")


def end(problems: Problems, where: str, key: str, ref, nodes: dict):
    """(node, NIC, port) of one end: a switch name, or a host port `HOST-nIpJ` (`HOST-nI` and
    `HOST` where the NIC, or the host, has only one port)."""
    match = PORT.match(ref) if isinstance(ref, str) else None
    node = nodes.get(match.group(1)) if match else None
    if node is None:
        problems.add(where, f"{key}: {ref!r}: no switch or host of that name (a dangling cable)")
        return None
    if isinstance(node, SwitchEntry):
        if match.group(2) is not None:
            problems.add(where, f"{key}: {ref!r}: {node.name} is a switch; name it alone")
            return None
        return (node.name, None, None)
    nic = int(match.group(2)) if match.group(2) is not None else (0 if len(node.rails) == 1 else None)
    port = int(match.group(3)) if match.group(3) is not None else (0 if node.ports == 1 else None)
    if nic is None or port is None:
        problems.add(where, f"{key}: {ref!r}: name the port (HOST-nIpJ): {node.name} has "
                            f"{len(node.rails)} NICs of {node.ports} ports")
        return None
    if nic >= len(node.rails) or port >= node.ports:
        problems.add(where, f"{key}: {ref!r}: {node.name} has no such port "
                            f"({len(node.rails)} NICs of {node.ports} ports)")
        return None
    return (node.name, nic, port)


def cable(problems: Problems, where: str, data: dict, nodes: dict, gbps: float) -> Cable | None:
    keys(problems, where, data, CABLE_KEYS)
    a, b = (end(problems, where, k, data.get(k), nodes) for k in ("a", "b"))
    rate = number(problems, where, data, "gbps", float, gbps, (0.001, 51200))
    if a is None or b is None:
        return None
    if a[1] is not None and b[1] is not None:
        problems.add(where, "a cable joins a host port to a switch, or two switches; not two hosts")
        return None
    if a[0] == b[0]:
        problems.add(where, f"{a[0]} is cabled to itself")
        return None

    def tier(e):
        return 0 if e[1] is not None else TIERS[nodes[e[0]].role]

    lower, upper = (a, b) if tier(a) <= tier(b) else (b, a)
    return Cable(lower, upper, rate)


def check_ports(problems: Problems, topo: Topology, radix: int) -> None:
    """Every host port cabled once, no switch over the radix."""
    used: dict[tuple, int] = {}
    ports: dict[str, int] = {}
    for c in topo.cables:
        for e in (c.a, c.b):
            if e[1] is None:
                ports[e[0]] = ports.get(e[0], 0) + 1
            else:
                used[e] = used.get(e, 0) + 1
    for h in topo.hosts:
        for nic in range(len(h.rails)):
            for p in range(h.ports):
                count = used.get((h.name, nic, p), 0)
                if count != 1:
                    problems.add(f"[[host]] {h.name}", f"port {h.name}-n{nic}p{p} is cabled "
                                                       f"{'twice or more' if count else 'nowhere'}")
    for s in topo.switches:
        if ports.get(s.name, 0) > radix:
            problems.add(f"[[switch]] {s.name}", f"{ports[s.name]} cables: over the radix ({radix}; "
                                                 "set radix = N at the top of the file)")
