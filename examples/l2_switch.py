"""An L2 learning switch, as a controller app that replaces ours (the kind of app os-ken's
`simple_switch_13` was; os-ken 4.x no longer ships its sample apps).

    sudo hpn-testbed up file --set topology=examples/tree.toml --controller-app examples/l2_switch.py --check
    sudo PYTHONPATH=examples hpn-testbed up file --set topology=examples/tree.toml \\
        --controller-app osken:l2_switch --check

Each switch sends what it has no rule for to the controller; the app learns the source MAC's
port, floods a frame for an unknown destination and installs a rule for a known one. Flooding
needs a loop-free fabric (a tree, e.g. examples/tree.toml), as for any learning switch. It speaks
OpenFlow 1.3 only: the bridges offer the versions an app declares (and 1.5), and the two sides
agree on 1.3.
"""
from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib.packet import ethernet, packet
from os_ken.ofproto import ofproto_v1_3

LLDP = 0x88CC
RULE_PRIORITY = 10


class LearningSwitch(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.ports: dict[int, dict[str, int]] = {}     # datapath id -> MAC -> port

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def on_switch(self, ev):
        """Send every frame without a rule to the controller, whole (no buffering)."""
        dp = ev.msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        self.ports[dp.id] = {}
        self.add_rule(dp, 0, parser.OFPMatch(),
                      [parser.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)])

    def add_rule(self, dp, priority, match, actions) -> None:
        parser = dp.ofproto_parser
        dp.send_msg(parser.OFPFlowMod(datapath=dp, priority=priority, match=match, instructions=[
            parser.OFPInstructionActions(dp.ofproto.OFPIT_APPLY_ACTIONS, actions)]))

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def on_packet_in(self, ev):
        msg = ev.msg
        dp = msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        in_port = msg.match["in_port"]
        eth = packet.Packet(msg.data).get_protocol(ethernet.ethernet)
        if eth is None or eth.ethertype == LLDP:
            return
        table = self.ports.setdefault(dp.id, {})
        table[eth.src] = in_port
        out = table.get(eth.dst, ofp.OFPP_FLOOD)
        actions = [parser.OFPActionOutput(out)]
        if out != ofp.OFPP_FLOOD:     # known: the switch forwards the rest itself
            self.add_rule(dp, RULE_PRIORITY, parser.OFPMatch(in_port=in_port, eth_dst=eth.dst), actions)
        data = msg.data if msg.buffer_id == ofp.OFP_NO_BUFFER else None
        dp.send_msg(parser.OFPPacketOut(datapath=dp, buffer_id=msg.buffer_id, in_port=in_port,
                                        actions=actions, data=data))
