"""Host-side path selection (HPN sec. 5, claim C6): disjoint 5-tuples, one connection per path,
each message on the connection with the fewest queued bytes.

HPN's RePaC reproduces each switch's exact hash; here the switches themselves are asked
(`ofproto/trace` through testbed.emulation.trace) where each candidate source port goes, and
source ports are kept while their paths share no switch-to-switch link with the ones already
kept. Sending uses the transfer agent of testbed.workload.collectives (a Send with several source
ports and policy "least-queued": per message, the connection whose own queue plus unacknowledged
bytes in the kernel (SIOCOUTQ) is smallest).
"""
from __future__ import annotations

from testbed.core.errors import TestbedError
from testbed.emulation.trace import emulation_trace
from testbed.model.fabric import Nic, Port


def traced_ports(emu, src: Nic, dst: Nic, sport: int, dport: int) -> tuple[Port, ...]:
    """The egress ports (switch, port) a 5-tuple leaves its switches by, read from the switches."""
    hops = emulation_trace(emu, src, dst, sport=sport, dport=dport)
    if not hops or hops[-1].out_port is None:
        raise TestbedError(f"{src.ip}:{sport} -> {dst.ip}:{dport} is dropped at "
                           f"{hops[-1].switch if hops else '?'}")
    return tuple((h.switch, h.out_port) for h in hops)


path_links = traced_ports   # the old name: scenarios/claims/disjoint_paths.py still calls it


def disjoint_sports(emu, src: Nic, dst: Nic, dport: int, want: int, start: int = 46000,
                    candidates: int = 64) -> list[tuple[int, tuple]]:
    """Up to `want` source ports whose paths to dst:dport share no fabric link (the last hop,
    toward the destination NIC, is shared by every path and not counted); [(sport, path)]."""
    chosen: list[tuple[int, tuple]] = []
    used: set = set()
    for sport in range(start, start + candidates):
        ports = traced_ports(emu, src, dst, sport, dport)
        inner = set(ports[:-1])
        if inner & used:
            continue
        chosen.append((sport, ports))
        used |= inner
        if len(chosen) == want:
            break
    return chosen
