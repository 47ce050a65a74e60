"""A controller app of your own, beside ours: it counts the packets switches send to the
controller and logs each port's state as a switch connects, then every port that goes up or
down. Ours still routes the fabric.

    sudo hpn-testbed up hpn --controller-app examples/controller_app.py --beside --check

It is a plain os-ken (Ryu API) app: os-ken hands every event to every app, so it sees the same
packet-ins and port-status messages ours does; it only watches and logs (to the run's
controller.log, kept with --keep). Beside ours, an app must speak OpenFlow 1.5 (OFP_VERSIONS),
must not send packets back out and may install rules only in table 2 and on (TABLE_USER in
testbed/model/contract.py), where table 1 sends what it does not route. See "Your own
controller app" in docs/extending.md.
"""
from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_5

LOG_EVERY = 100      # one summary line per this many packet-ins


class PacketInCounter(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_5.OFP_VERSION]     # what our app speaks: both must accept it

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.packet_ins: dict[int, int] = {}      # datapath id -> packet-ins seen

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def on_switch(self, ev):
        dp = ev.msg.datapath
        self.logger.info("counter: switch %016x connected", dp.id)
        # ports that came up before the handshake ended sent no port-status we could see: ask
        dp.send_msg(dp.ofproto_parser.OFPPortDescStatsRequest(dp, 0))

    @set_ev_cls(ofp_event.EventOFPPortDescStatsReply, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def on_ports(self, ev):
        for port in ev.msg.body:
            self.log_port(ev.msg.datapath, port)

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def on_packet_in(self, ev):
        dpid = ev.msg.datapath.id
        self.packet_ins[dpid] = self.packet_ins.get(dpid, 0) + 1
        total = sum(self.packet_ins.values())
        if total == 1 or total % LOG_EVERY == 0:
            self.logger.info("counter: %d packet-ins from %d switches", total, len(self.packet_ins))

    # both states: os-ken moves a switch to MAIN in another thread, so a port-status that follows
    # the features reply closely is handed out while the switch is still in CONFIG
    @set_ev_cls(ofp_event.EventOFPPortStatus, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def on_port_status(self, ev):
        self.log_port(ev.msg.datapath, ev.msg.desc)

    def log_port(self, dp, port):
        if port.port_no > dp.ofproto.OFPP_MAX:        # the switch's own LOCAL port
            return
        down = bool(port.state & dp.ofproto.OFPPS_LINK_DOWN)
        self.logger.info("counter: switch %016x port %d (%s) %s", dp.id, port.port_no,
                         port.name.decode(errors="replace") if isinstance(port.name, bytes) else port.name,
                         "down" if down else "up")
