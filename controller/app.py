"""The fabric controller: an app written against the Ryu API (run on os-ken).

It only pushes what testbed.routing computes and reacts to events:
- switch connects: wipe it, install the base pipeline, then every route it should hold;
- gratuitous ARP from a host port: learn ip -> (switch, port, mac), recompute that NIC's routes;
- ARP request for the gateway: answer it;
- port status: mark the port up or down and recompute every route.
It writes a small status file (learned NICs, connected switches, routes) that the testbed polls.
"""
from __future__ import annotations

import json
import os
from collections import Counter

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib.packet import arp, ethernet, packet
from os_ken.ofproto import ofproto_v1_5

from controller import ofp15
from testbed.routing import FIVE_TUPLE, Route, ecmp_basis, routes_to
from testbed.topo import make_fabric
from testbed.topo.model import GATEWAY_IP, GATEWAY_MAC

PRIO_ARP, PRIO_ROUTE, PRIO_PINNED = 1000, 500, 600
SPEC_ENV = "HPN_TESTBED_SPEC"


class FabricController(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_5.OFP_VERSION]   # select-group hashing needs OpenFlow 1.5

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        ofp15.apply_parser_fixes()
        with open(os.environ[SPEC_ENV]) as f:
            self.spec = json.load(f)
        self.fabric = make_fabric(self.spec["family"], self.spec["params"])
        self.policy = self.spec.get("routing", {})
        self.names = {sw.dpid: sw.name for sw in self.fabric.switches.values()}
        self.datapaths = {}                  # switch name -> datapath
        self.learned: dict[str, dict] = {}   # ip -> {"mac": str, "at": set[(switch, port)]}
        self.down: set[tuple[str, int]] = set()
        self.installed: dict[tuple[str, str], Route] = {}
        self.groups: dict[str, dict[tuple[int, ...], int]] = {}   # switch -> ports -> group id
        self.write_status()

    # ---- events ----
    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def on_switch(self, ev):
        dp = ev.msg.datapath
        name = self.names.get(dp.id)
        if name is None:
            self.logger.warning("ignoring unknown datapath %016x", dp.id)
            return
        ofp, parser = dp.ofproto, dp.ofproto_parser
        dp.send_msg(parser.OFPFlowMod(dp, command=ofp.OFPFC_DELETE, table_id=ofp.OFPTT_ALL,
                                      out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
                                      match=parser.OFPMatch()))
        dp.send_msg(parser.OFPGroupMod(dp, command=ofp.OFPGC_DELETE, group_id=ofp.OFPG_ALL))
        self.groups[name] = {}
        self.installed = {k: r for k, r in self.installed.items() if k[0] != name}
        # ARP goes to the controller; everything unrouted is dropped by the table miss.
        self.add_flow(dp, PRIO_ARP, parser.OFPMatch(eth_type=0x0806),
                      [parser.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)])
        self.datapaths[name] = dp
        self.sync()

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def on_packet_in(self, ev):
        msg = ev.msg
        dp = msg.datapath
        pkt = packet.Packet(msg.data)
        a = pkt.get_protocol(arp.arp)
        name = self.names.get(dp.id)
        if a is None or name is None:
            return
        in_port = msg.match["in_port"]
        if a.opcode == arp.ARP_REQUEST and a.dst_ip == GATEWAY_IP:
            self.answer_gateway(dp, in_port, a)
        elif a.src_ip == a.dst_ip and a.src_ip != GATEWAY_IP:   # gratuitous: a NIC announces itself
            entry = self.learned.setdefault(a.src_ip, {"mac": a.src_mac, "at": set()})
            if (name, in_port) not in entry["at"] or entry["mac"] != a.src_mac:
                entry["mac"] = a.src_mac
                entry["at"].add((name, in_port))
                self.logger.info("learned %s at %s port %d", a.src_ip, name, in_port)
                self.sync()

    @set_ev_cls(ofp_event.EventOFPPortStatus, MAIN_DISPATCHER)
    def on_port_status(self, ev):
        msg = ev.msg
        name = self.names.get(msg.datapath.id)
        ofp = msg.datapath.ofproto
        port = (name, msg.desc.port_no)
        dead = msg.reason == ofp.OFPPR_DELETE or bool(msg.desc.state & ofp.OFPPS_LINK_DOWN)
        if dead != (port in self.down):
            (self.down.add if dead else self.down.discard)(port)
            self.logger.info("port %s %d %s", name, port[1], "down" if dead else "up")
            self.sync()

    # ---- pushing computed state ----
    def wanted(self) -> dict[tuple[str, str], Route]:
        routes = {}
        for ip, entry in self.learned.items():
            for r in routes_to(self.fabric, ip, entry["mac"], entry["at"], frozenset(self.down)):
                routes[(r.switch, ip)] = r
        return routes

    def sync(self):
        wanted = self.wanted()
        for key, route in wanted.items():
            dp = self.datapaths.get(route.switch)
            if dp is not None and self.installed.get(key) != route:
                self.install_route(dp, route)
                self.installed[key] = route
        for key in [k for k in self.installed if k not in wanted]:
            dp = self.datapaths.get(key[0])
            if dp is not None:
                parser = dp.ofproto_parser
                dp.send_msg(parser.OFPFlowMod(
                    dp, command=dp.ofproto.OFPFC_DELETE_STRICT, priority=PRIO_ROUTE,
                    out_port=dp.ofproto.OFPP_ANY, out_group=dp.ofproto.OFPG_ANY,
                    match=parser.OFPMatch(eth_type=0x0800, ipv4_dst=key[1])))
            del self.installed[key]
        self.write_status()

    def install_route(self, dp, route: Route):
        parser = dp.ofproto_parser
        actions = []
        if route.deliver_mac:
            actions += [parser.OFPActionSetField(eth_src=GATEWAY_MAC),
                        parser.OFPActionSetField(eth_dst=route.deliver_mac)]
        if len(route.ports) == 1 or route.deliver_mac:
            actions.append(parser.OFPActionOutput(route.ports[0]))
        else:
            actions.append(parser.OFPActionGroup(self.group_for(dp, route.switch, route.ports)))
        self.add_flow(dp, PRIO_ROUTE, parser.OFPMatch(eth_type=0x0800, ipv4_dst=route.ip), actions)

    def group_for(self, dp, switch: str, ports: tuple[int, ...]) -> int:
        """An ECMP select group over `ports` (made once per switch and port set)."""
        known = self.groups.setdefault(switch, {})
        if ports not in known:
            ofp, parser = dp.ofproto, dp.ofproto_parser
            gid = known[ports] = len(known) + 1
            buckets = [parser.OFPBucket(
                bucket_id=i, actions=[parser.OFPActionOutput(p)],
                # a bucket whose port is down is skipped: failover without the controller
                properties=[parser.OFPGroupBucketPropWatch(type_=ofp.OFPGBPT_WATCH_PORT, watch=p)])
                for i, p in enumerate(ports)]
            basis = ecmp_basis(self.policy.get("ecmp", "seeded"), self.fabric.switches[switch])
            props = [ofp15.hash_selection_property(FIVE_TUPLE, basis)]
            dp.send_msg(parser.OFPGroupMod(dp, command=ofp.OFPGC_ADD, type_=ofp.OFPGT_SELECT,
                                           group_id=gid, buckets=buckets, properties=props))
        return known[ports]

    def add_flow(self, dp, priority, match, actions):
        parser, ofp = dp.ofproto_parser, dp.ofproto
        inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
        dp.send_msg(parser.OFPFlowMod(dp, priority=priority, match=match, instructions=inst))

    def answer_gateway(self, dp, in_port: int, request):
        ofp, parser = dp.ofproto, dp.ofproto_parser
        reply = packet.Packet()
        reply.add_protocol(ethernet.ethernet(dst=request.src_mac, src=GATEWAY_MAC, ethertype=0x0806))
        reply.add_protocol(arp.arp(opcode=arp.ARP_REPLY, src_mac=GATEWAY_MAC, src_ip=GATEWAY_IP,
                                   dst_mac=request.src_mac, dst_ip=request.src_ip))
        reply.serialize()
        dp.send_msg(parser.OFPPacketOut(dp, buffer_id=ofp.OFP_NO_BUFFER,
                                        match=parser.OFPMatch(in_port=ofp.OFPP_CONTROLLER),
                                        actions=[parser.OFPActionOutput(in_port)], data=reply.data))

    def write_status(self):
        path = self.spec.get("status")
        if not path:
            return
        status = {
            "connected": sorted(self.datapaths),
            "learned": {ip: sorted(map(list, e["at"])) for ip, e in self.learned.items()},
            "down": sorted(map(list, self.down)),
            "routes": len(self.installed),
            "routes_per_switch": dict(Counter(sw for sw, _ in self.installed)),
        }
        with open(path + ".tmp", "w") as f:
            json.dump(status, f)
        os.replace(path + ".tmp", path)
