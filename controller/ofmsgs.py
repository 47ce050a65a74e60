"""Between os-ken and the rule state (controller/rulestate.py), both ways: what a switch sent,
read as plain facts; the rule state's messages, sent as OpenFlow (rules through
controller/switch.py's SwitchWriter).
"""
from __future__ import annotations

from typing import NamedTuple

from os_ken.lib.packet import arp, ethernet, ipv4, packet, tcp

from controller.rulestate import Install, Message, PollFlows, PollPorts, Remove, Reset
from controller.switch import SwitchWriter
from testbed.model.contract import FLOW_COOKIE, PROBE_ETHERTYPE, TABLE_FORWARD
from testbed.model.policies import FiveTuple


class Probe(NamedTuple):
    """A wiring probe (testbed/measure/wiring.py): its name."""
    probe: str


class Arp(NamedTuple):
    src_ip: str
    src_mac: str
    dst_ip: str


class TcpSegment(NamedTuple):
    key: FiveTuple
    flags: int


def read_packet(data: bytes) -> Probe | Arp | TcpSegment | None:
    """What a packet-in carries, as far as the controller cares (None: nothing it reads)."""
    pkt = packet.Packet(data)
    eth = pkt.get_protocol(ethernet.ethernet)
    if eth is not None and eth.ethertype == PROBE_ETHERTYPE:
        return Probe(data[14:].split(b"\0", 1)[0].decode(errors="replace"))
    a = pkt.get_protocol(arp.arp)
    if a is not None:
        return Arp(a.src_ip, a.src_mac, a.dst_ip)
    ip, seg = pkt.get_protocol(ipv4.ipv4), pkt.get_protocol(tcp.tcp)
    if ip is None or seg is None:
        return None
    return TcpSegment(FiveTuple(ip.src, ip.dst, 6, seg.src_port, seg.dst_port), seg.bits)


def ports_reported(msg) -> list[tuple[int, bool]]:
    """(port, dead) of each port a PORT_DESC reply or a PORT_STATUS message reports; dead: no
    carrier, or deleted."""
    ofp = msg.datapath.ofproto
    if hasattr(msg, "body"):   # PORT_DESC, as a switch connects
        return [(desc.port_no, bool(desc.state & ofp.OFPPS_LINK_DOWN)) for desc in msg.body]
    dead = msg.reason == ofp.OFPPR_DELETE or bool(msg.desc.state & ofp.OFPPS_LINK_DOWN)
    return [(msg.desc.port_no, dead)]


def port_counters(body) -> list[tuple[int, int]]:
    """(port, tx_bytes) of each port in a PORT_STATS reply."""
    return [(stat.port_no, stat.tx_bytes) for stat in body]


def flow_counters(body) -> list[tuple[FiveTuple, int]]:
    """(5-tuple, byte count) of each per-flow rule in a FLOW_DESC reply."""
    counters = []
    for stat in body:
        m = stat.match
        try:
            key = FiveTuple(m["ipv4_src"], m["ipv4_dst"], 6, m["tcp_src"], m["tcp_dst"])
        except KeyError:
            continue
        if stat.stats is not None:
            counters.append((key, dict(stat.stats.fields)["byte_count"]))
    return counters


def send(writer: SwitchWriter, msg: Message) -> None:
    """One message of the rule state, to the switch `writer` writes to."""
    dp, ofp, parser = writer.dp, writer.ofp, writer.parser
    if isinstance(msg, Reset):
        writer.reset(msg.samples, beside=msg.beside)
    elif isinstance(msg, Install):
        writer.install(msg.key, msg.value)
    elif isinstance(msg, Remove):
        writer.remove(msg.key)
    elif isinstance(msg, PollPorts):
        dp.send_msg(parser.OFPPortStatsRequest(dp, 0, ofp.OFPP_ANY))
    elif isinstance(msg, PollFlows):
        # OVS answers OpenFlow 1.5's per-flow counters as FLOW_DESC (its OXS-based FLOW_STATS
        # request is refused with BAD_STAT)
        dp.send_msg(parser.OFPFlowDescStatsRequest(
            dp, table_id=TABLE_FORWARD, cookie=FLOW_COOKIE, cookie_mask=0xFFFFFFFFFFFFFFFF))
