"""Where does a 5-tuple go? Read hop by hop from the switches themselves (ofproto/trace).

The first hop is the host's own choice of port (the kernel's multipath route answers
`ip route get` for the exact 5-tuple); from there each switch is asked which port the packet
leaves on, select-group bucket included, and the model says what is cabled to that port.
"""
from __future__ import annotations

import re

from testbed.core import sh
from testbed.core.errors import TestbedError
from testbed.model.fabric import GATEWAY_MAC, Fabric, Nic
from testbed.model.paths import MAX_HOPS, Hop, LoopError, walk


def first_port(hosts, src: Nic, dst: Nic, proto: str, sport: int, dport: int) -> str:
    """The NIC port the source host sends this 5-tuple on."""
    if len(src.ports) == 1:
        return src.ports[0]
    dev = hosts[src.host].route_dev(src.ip, dst.ip, proto, sport, dport)
    if dev is None:
        raise TestbedError(f"no route on {src.host} for {src.ip} -> {dst.ip}")
    if dev in src.ports:
        return dev
    # route_dev names a Linux bond's slave itself (its layer3+4 hash); a bond with no slave up
    # has no choice to follow: trace from its first port
    return src.ports[0]


def trace_flow(in_port: int, src: Nic, dst: Nic, proto: str, sport: int, dport: int) -> str:
    """The packet ofproto/trace follows. Ports are named per protocol (tcp_src, udp_src): OVS
    reads the old tp_src as TCP's, so a UDP flow written with it does not parse."""
    if proto not in ("tcp", "udp"):
        raise ValueError(f"proto={proto!r}: trace follows tcp or udp")
    return (f"in_port={in_port},{proto},dl_src={src.mac},dl_dst={GATEWAY_MAC},nw_src={src.ip},"
            f"nw_dst={dst.ip},nw_ttl=64,{proto}_src={sport},{proto}_dst={dport}")


def local_appctl(switch: str, *args: str) -> str:
    """ovs-appctl on this machine's Open vSwitch (`switch` says which one: here, always ours)."""
    return sh.run(["ovs-appctl", *args])


def switch_out_port(switch: str, in_port: int, src: Nic, dst: Nic, proto: str, sport: int,
                    dport: int, appctl=local_appctl) -> int | None:
    flow = trace_flow(in_port, src, dst, proto, sport, dport)
    out = appctl(switch, "ofproto/trace", switch, flow)
    ports = re.findall(r"\boutput:(\d+)", out)
    return int(ports[-1]) if ports else None


def trace(fabric: Fabric, hosts, src: Nic, dst: Nic, proto: str = "tcp", sport: int = 40000,
          dport: int = 5201, appctl=local_appctl) -> list[Hop]:
    """The hops of one 5-tuple from `src` to `dst`; `hosts[name]` answers `route_dev`
    (testbed.emulation.hosts); `appctl(switch, *args)` runs ovs-appctl where `switch` lives."""
    port = first_port(hosts, src, dst, proto, sport, dport)
    link = fabric.host_link(port)

    def out_port(switch: str, in_port: int) -> int | None:
        return switch_out_port(switch, in_port, src, dst, proto, sport, dport, appctl)
    try:
        return walk(fabric, (link.b, link.b_port), out_port)
    except LoopError:
        raise TestbedError(f"{src.ip} -> {dst.ip}: more than {MAX_HOPS} hops (a loop?)") from None


def emulation_trace(emu, src: Nic, dst: Nic, **kw) -> list[Hop]:
    """trace() on a running Emulation."""
    return trace(emu.fabric, emu.net, src, dst, appctl=emu.site.appctl, **kw)
