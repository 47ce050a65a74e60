"""Which port a host's multipath hash sends a flow on, and the source ports chosen from it.

One question, asked one way: the host's kernel (`ip route get`, one batch per host, every host
at once; where the route names a Linux bond, its layer3+4 hash over the slaves that are up:
testbed.emulation.hosts). The three choices the workloads make from the answers are here too:
a block of consecutive client ports that iperf3 -P spreads evenly (`cport_base`), source ports
taken from each port in turn (`in_turns`), and the first source port found on each port
(`by_port`).
"""
from __future__ import annotations

import itertools

from testbed.emulation.hosts import hosts_flow_devs
from testbed.model.fabric import Nic

CPORT_BASE = 41000     # iperf3 --cport blocks tried from here, 16 x streams apart, 8 of them


def sport_ports(emu, asks: list[tuple[Nic, Nic, str, list[int], int]]) -> list[list[str | None]]:
    """For each (src, dst, proto, sports, dport): the port of src each sport's flow leaves on."""
    by_host: dict[str, list[tuple]] = {}
    for src, dst, proto, sports, dport in asks:
        by_host.setdefault(src.host, []).extend((src.ip, dst.ip, proto, s, dport) for s in sports)
    devs = hosts_flow_devs(emu.net, by_host) if by_host else {}
    out, taken = [], dict.fromkeys(by_host, 0)
    for src, _, _, sports, _ in asks:
        k = taken[src.host]
        out.append(devs[src.host][k:k + len(sports)])
        taken[src.host] += len(sports)
    return out


def cport_base(emu, src: Nic, dst: Nic, streams: int, dport: int, proto: str = "tcp") -> int:
    """A client port base whose `streams` consecutive ports the kernel spreads most evenly over
    src's ports (the first that spreads them perfectly; one question for every base tried)."""
    if len(src.ports) < 2:
        return CPORT_BASE
    bases = list(range(CPORT_BASE, CPORT_BASE + 16 * streams * 8, 16 * streams))
    answers = sport_ports(emu, [(src, dst, proto, [b + i for i in range(streams)], dport) for b in bases])
    best, best_spread = CPORT_BASE, -1
    for base, devs in zip(bases, answers):
        spread = min(devs.count(p) for p in src.ports)
        if spread > best_spread:
            best, best_spread = base, spread
        if spread == streams // len(src.ports):
            break
    return best


def by_port(candidates: list[int], devs: list) -> dict[str | None, list[int]]:
    """The candidates grouped by the port each leaves on, in candidate order."""
    groups: dict[str | None, list[int]] = {}
    for sport, dev in zip(candidates, devs):
        groups.setdefault(dev, []).append(sport)
    return groups


def in_turns(candidates: list[int], devs: list, ports: tuple[str, ...], want: int) -> tuple[int, ...]:
    """`want` of `candidates`, taken from the NIC's ports in turn (`devs`: the port each candidate
    leaves on; where no port is known, simply the first `want`)."""
    if len(ports) < 2 or len(devs) != len(candidates) or not set(devs) & set(ports):
        return tuple(candidates[:want])
    groups = by_port(candidates, devs)
    turns = [s for row in itertools.zip_longest(*(groups.get(p, []) for p in ports))
             for s in row if s is not None]
    return tuple(sorted(turns[:want]))
