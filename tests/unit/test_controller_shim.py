"""The os-ken shim (controller/app.py, ofmsgs.py): os-ken's events read as calls on the rule
state, its messages sent as OpenFlow. A real FabricController, built from a run's spec, fed
the messages a switch would send (fake datapaths that serialize and keep what they are sent);
no OVS, no os-ken app manager. The transitions themselves: test_rulestate.py."""
import json
from pathlib import Path
from types import SimpleNamespace as NS

import pytest
from os_ken.lib.packet import arp, ethernet, ipv4, packet, tcp
from os_ken.ofproto import ofproto_v1_5, ofproto_v1_5_parser
from os_ken.ofproto import ofproto_v1_5 as ofp

from controller import app, ofmsgs
from testbed.model import families, make_fabric
from testbed.model.contract import PRIO_ROUTE, PROBE_ETHERTYPE, ControllerStatus

TREE = {"topology": str(Path(__file__).resolve().parents[2] / "examples" / "tree.toml")}
A0, B0 = "10.0.0.1", "10.0.0.3"     # a0 on leaf0 port 1, b0 on leaf1 port 1


def mac(ip):
    return "02:00:0a:00:00:0" + ip[-1]


class FakeDatapath:
    ofproto, ofproto_parser = ofproto_v1_5, ofproto_v1_5_parser
    is_active, send_q = True, None      # os-ken's: no queue of its own to wait for room in

    def __init__(self, dpid):
        self.id, self.sent, self.closed = dpid, [], False

    def send_msg(self, msg):
        msg.set_xid(len(self.sent) + 1)
        msg.serialize()
        self.sent.append(msg)

    def close(self):
        self.closed = True

    def routes(self):
        return {m.match["ipv4_dst"] for m in self.sent
                if isinstance(m, ofproto_v1_5_parser.OFPFlowMod) and m.priority == PRIO_ROUTE
                and m.command == ofp.OFPFC_ADD}


@pytest.fixture
def ctl(tmp_path, monkeypatch):
    fab = make_fabric("file", TREE)
    spec = {**families.spec_of(fab), "routing": {}, "status": str(tmp_path / "status.json"),
            "sightings": str(tmp_path / "sightings")}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    monkeypatch.setenv(app.runfiles.SPEC_ENV, str(tmp_path / "spec.json"))
    c = app.FabricController()
    c.dpids = {sw.name: sw.dpid for sw in fab.switches.values()}
    c.read_status = lambda: ControllerStatus.from_json(json.loads((tmp_path / "status.json").read_text()))
    return c


def connect(c, name):
    dp = FakeDatapath(c.dpids[name])
    c.on_switch(NS(msg=NS(datapath=dp)))
    return dp


def packet_in(c, dp, in_port, pkt):
    pkt.serialize()
    c.on_packet_in(NS(msg=NS(datapath=dp, match={"in_port": in_port}, data=bytes(pkt.data))))


def gratuitous(ip):
    pkt = packet.Packet()
    pkt.add_protocol(ethernet.ethernet("ff:ff:ff:ff:ff:ff", mac(ip), 0x0806))
    pkt.add_protocol(arp.arp(src_mac=mac(ip), src_ip=ip, dst_mac="00:00:00:00:00:00", dst_ip=ip))
    return pkt


def desc(port_no, down):
    return NS(port_no=port_no, state=ofp.OFPPS_LINK_DOWN if down else 0)


def test_a_switch_connects_learns_and_settles_into_openflow(ctl):
    leaf0 = connect(ctl, "leaf0")
    assert ctl.read_status().connected == ("leaf0",)
    packet_in(ctl, leaf0, 1, gratuitous(A0))
    assert ctl.settle_pending and not ctl.state.settled
    ctl.on_settle(None)
    assert leaf0.routes() == {A0}
    assert ctl.read_status().routes == 0 and ctl.settle_pending   # written too lately: soon again
    ctl.status.written -= app.STATUS_MIN_S
    ctl.on_settle(None)
    assert ctl.read_status().routes == 1 and not ctl.settle_pending
    leaf1 = connect(ctl, "leaf1")
    assert leaf1.routes() == {A0}                      # what it should hold, as it connects


def test_a_reconnect_closes_the_old_connection_and_a_dead_one_is_lost(ctl):
    old = connect(ctl, "leaf0")
    new = connect(ctl, "leaf0")
    assert old.closed and not new.closed and ctl.read_status().lost == ("leaf0",)
    ctl.on_disconnect(NS(datapath=old))                # the old one's end: already counted
    assert ctl.read_status().lost == ("leaf0",)
    ctl.on_disconnect(NS(datapath=new))
    assert ctl.read_status().lost == ("leaf0", "leaf0") and ctl.read_status().connected == ()


def test_an_unknown_datapath_is_refused(ctl):
    dp = FakeDatapath(12345)
    ctl.on_switch(NS(msg=NS(datapath=dp)))
    assert dp.closed and dp.sent == [] and ctl.state.connected == set()


def test_port_desc_and_port_status_are_read_as_carrier(ctl):
    dp = connect(ctl, "leaf0")
    ctl.on_ports(NS(msg=NS(datapath=dp, body=[desc(1, True), desc(2, False), desc(ofp.OFPP_LOCAL, True)])))
    assert ctl.state.down == {("leaf0", 1)} and ctl.settle_pending
    ctl.on_ports(NS(msg=NS(datapath=dp, desc=desc(2, False), reason=ofp.OFPPR_DELETE)))   # deleted = down
    ctl.on_ports(NS(msg=NS(datapath=dp, desc=desc(1, False), reason=ofp.OFPPR_MODIFY)))
    assert ctl.state.down == {("leaf0", 2)}


def test_port_handlers_run_before_os_ken_moves_a_switch_to_main():
    callers = app.FabricController.on_ports.callers
    assert set(callers) == {app.ofp_event.EventOFPPortDescStatsReply, app.ofp_event.EventOFPPortStatus}
    assert all(set(c.dispatchers) == {"config", "main"} for c in callers.values())


def test_a_wiring_probe_is_a_postcard(ctl, tmp_path):
    dp = connect(ctl, "leaf1")
    pkt = packet.Packet()
    pkt.add_protocol(ethernet.ethernet("ff:ff:ff:ff:ff:ff", mac(B0), PROBE_ETHERTYPE))
    pkt.add_protocol(b"probe-7\0pad")
    packet_in(ctl, dp, 2, pkt)
    assert json.loads((tmp_path / "sightings").read_text()) == {"probe": "probe-7", "switch": "leaf1",
                                                                 "in_port": 2}


def test_a_tcp_segment_is_read_as_its_five_tuple():
    pkt = packet.Packet()
    pkt.add_protocol(ethernet.ethernet(mac(B0), mac(A0), 0x0800))
    pkt.add_protocol(ipv4.ipv4(src=A0, dst=B0, proto=6))
    pkt.add_protocol(tcp.tcp(src_port=40000, dst_port=5201, bits=tcp.TCP_SYN))
    pkt.serialize()
    seen = ofmsgs.read_packet(bytes(pkt.data))
    assert seen == ofmsgs.TcpSegment(ofmsgs.FiveTuple(A0, B0, 6, 40000, 5201), tcp.TCP_SYN)
