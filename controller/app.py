"""The fabric controller: an app written against the Ryu API (run on os-ken).

It only pushes what testbed.model.routing and testbed.model.policies compute and reacts to events:
- switch connects: wipe it, install the base pipeline, then every rule it should hold;
- gratuitous ARP from a host port: learn ip -> (switch, port, mac), recompute that NIC's routes;
- ARP request for the gateway: answered by the switch itself, with a rule installed at connect
  (as a ToR's own CPU would answer; a host's probe then tests its link, not the controller);
- port status: mark the port up or down and recompute every rule;
- (policy adaptive) a TCP SYN/FIN/RST copied by a switch: track or forget that flow; every poll
  interval: ask every switch for its port counters and its per-flow counters, let
  policies.plan_moves decide which flows to pin where, push the per-flow rules.

Pipeline. Table 0 classifies: ARP for the gateway is answered in place, other ARP goes to the
controller; with policy adaptive, TCP packets with SYN, FIN or RST are also copied to the
controller (first 128 bytes); everything else goes on to table 1.
Table 1 forwards: /32 routes (priority 500; several next hops = a select group hashing the
5-tuple), per-port core rules (550; a fast-failover group), per-flow rules (600, adaptive).
It writes a small status file (learned NICs, connected switches, rules, adaptive moves) that the
testbed polls.
"""
from __future__ import annotations

import json
import os
import time
from collections import Counter

from os_ken.base import app_manager
from os_ken.controller import event, ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib import hub
from os_ken.lib.packet import arp, ipv4, packet, tcp
from os_ken.ofproto import ofproto_v1_5

from controller import ofp15
from testbed.model import make_fabric, policies
from testbed.model.fabric import GATEWAY_IP, GATEWAY_MAC
from testbed.model.routing import FIVE_TUPLE, Route, ecmp_basis, routes_to

PRIO_GATEWAY_ARP, PRIO_ARP, PRIO_SAMPLE, PRIO_MISS = 1100, 1000, 900, 0   # table 0
PRIO_ROUTE, PRIO_CORE, PRIO_PINNED = 500, 550, 600        # table 1
TABLE_CLASSIFY, TABLE_FORWARD = 0, 1
FLOW_COOKIE = 0x5EED_F10E                                  # marks per-flow rules
SAMPLE_BYTES = 128
TCP_FIN, TCP_SYN, TCP_RST = 0x01, 0x02, 0x04
FLOW_IDLE_S = 10.0
SPEC_ENV = "HPN_TESTBED_SPEC"


class EventTick(event.EventBase):
    """Poll time (adaptive): sent by the app's ticker thread to its own event loop."""


class FabricController(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_5.OFP_VERSION]   # select-group hashing needs OpenFlow 1.5

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        ofp15.apply_parser_fixes()
        with open(os.environ[SPEC_ENV]) as f:
            self.spec = json.load(f)
        self.fabric = make_fabric(self.spec["family"], self.spec["params"])
        self.policy = policies.normalize(self.fabric, self.spec.get("routing", {}))
        self.adaptive = self.policy["policy"] == "adaptive"
        self.names = {sw.dpid: sw.name for sw in self.fabric.switches.values()}
        self.datapaths = {}                  # switch name -> datapath
        self.learned: dict[str, dict] = {}   # ip -> {"mac": str, "at": set[(switch, port)]}
        self.down: set[tuple[str, int]] = set()
        # installed rules: (kind, switch, ...) -> value; kind route | core | flow
        self.installed: dict[tuple, object] = {}
        self.base: dict[tuple, object] = {}  # wanted route and core rules, from the last sync
        self.fwd = policies.Forwarding(self.fabric, [])
        self.groups: dict[str, dict[tuple, int]] = {}   # switch -> group key -> group id
        # adaptive state
        self.flows: dict[policies.FiveTuple, policies.TrackedFlow] = {}
        self.capacity = policies.link_capacity(self.fabric)
        self.port_samples: dict[tuple[str, int], tuple[float, int]] = {}
        self.port_rate: dict[tuple[str, int], float] = {}
        self.moves: list[dict] = []
        if self.adaptive:
            self.threads.append(hub.spawn(self._ticker))
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
        self.installed = {k: v for k, v in self.installed.items() if k[1] != name}
        # ARP goes to the controller; the rest on to forwarding, where unrouted packets drop.
        self.add_flow(dp, PRIO_ARP, parser.OFPMatch(eth_type=0x0806),
                      [parser.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)],
                      table=TABLE_CLASSIFY, goto=None)
        self.add_flow(dp, PRIO_GATEWAY_ARP,
                      parser.OFPMatch(eth_type=0x0806, arp_op=1, arp_tpa=GATEWAY_IP),
                      gateway_arp_reply(parser, ofp), table=TABLE_CLASSIFY, goto=None)
        if self.adaptive:   # the controller learns each TCP flow's path from its SYN at every hop
            for flag in (TCP_SYN, TCP_FIN, TCP_RST):
                self.add_flow(dp, PRIO_SAMPLE,
                              parser.OFPMatch(eth_type=0x0800, ip_proto=6, tcp_flags=(flag, flag)),
                              [parser.OFPActionOutput(ofp.OFPP_CONTROLLER, SAMPLE_BYTES)],
                              table=TABLE_CLASSIFY, goto=TABLE_FORWARD)
        self.add_flow(dp, PRIO_MISS, parser.OFPMatch(), [], table=TABLE_CLASSIFY, goto=TABLE_FORWARD)
        self.datapaths[name] = dp
        self.sync()

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def on_packet_in(self, ev):
        msg = ev.msg
        dp = msg.datapath
        name = self.names.get(dp.id)
        if name is None:
            return
        pkt = packet.Packet(msg.data)
        in_port = msg.match["in_port"]
        a = pkt.get_protocol(arp.arp)
        if a is None:
            if self.adaptive:
                self.on_tcp_sample(name, in_port, pkt)
            return
        if a.src_ip == a.dst_ip and a.src_ip != GATEWAY_IP:   # gratuitous: a NIC announces itself
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

    @set_ev_cls(ofp_event.EventOFPErrorMsg, MAIN_DISPATCHER)
    def on_error(self, ev):
        msg = ev.msg
        self.logger.warning("OpenFlow error from %s: type %d code %d (request xid %d)",
                            self.names.get(msg.datapath.id), msg.type, msg.code, msg.xid)

    # ---- adaptive ----
    def _ticker(self):
        while True:
            hub.sleep(self.policy["interval"])
            self.send_event(self.name, EventTick())

    def on_tcp_sample(self, name: str, in_port: int, pkt) -> None:
        ip, seg = pkt.get_protocol(ipv4.ipv4), pkt.get_protocol(tcp.tcp)
        if ip is None or seg is None:
            return
        key = policies.FiveTuple(ip.src, ip.dst, 6, seg.src_port, seg.dst_port)
        if seg.bits & (TCP_FIN | TCP_RST):
            if self.flows.pop(key, None) is not None:
                self.sync_flows()
            return
        if not seg.bits & TCP_SYN:
            return
        flow = self.flows.get(key)
        if flow is None:
            flow = self.flows[key] = policies.TrackedFlow(key, active_at=time.monotonic())
        if flow.pins or flow.seen.get(name) == in_port:
            return   # a placed flow stays where the controller put it
        flow.seen[name] = in_port
        flow.hops = None
        self.sync_flows()

    @set_ev_cls(EventTick)
    def on_tick(self, ev):
        for name, dp in self.datapaths.items():
            ofp, parser = dp.ofproto, dp.ofproto_parser
            dp.send_msg(parser.OFPPortStatsRequest(dp, 0, ofp.OFPP_ANY))
            if any(k[0] == "flow" and k[1] == name for k in self.installed):
                dp.send_msg(parser.OFPFlowDescStatsRequest(
                    dp, table_id=TABLE_FORWARD, cookie=FLOW_COOKIE, cookie_mask=0xFFFFFFFFFFFFFFFF))
        now = time.monotonic()
        dropped = policies.prune(self.flows, self.fwd, frozenset(self.down), now, FLOW_IDLE_S)
        for flow in self.flows.values():
            if flow.hops is None:
                flow.hops = policies.path_from_sightings(self.fwd, flow.key.dst, flow.seen)
        moves = policies.plan_moves(self.fwd, self.flows, self.port_rate, self.capacity, now,
                                    self.policy["hot"], self.policy["elephant"], self.policy["hold"])
        for m in moves:
            flow = self.flows[m.key]
            flow.hops, flow.pins, flow.moved_at = list(m.hops), dict(m.pins), now
            record = {"flow": list(m.key), "from": list(m.at), "pins": m.pins, "score": m.score,
                      "rate_mbps": round(flow.rate, 3), "t": round(now, 3)}
            self.moves = self.moves[-199:] + [record]
            self.logger.info("adaptive move %s", record)
        if moves or dropped:
            self.sync_flows()
        else:
            self.write_status()

    @set_ev_cls(ofp_event.EventOFPPortStatsReply, MAIN_DISPATCHER)
    def on_port_stats(self, ev):
        name = self.names.get(ev.msg.datapath.id)
        now = time.monotonic()
        for stat in ev.msg.body:
            key = (name, stat.port_no)
            if key not in self.capacity:
                continue
            last = self.port_samples.get(key)
            if last and now > last[0] and stat.tx_bytes >= last[1]:
                self.port_rate[key] = (stat.tx_bytes - last[1]) * 8 / 1e6 / (now - last[0])
            self.port_samples[key] = (now, stat.tx_bytes)

    # OVS answers OpenFlow 1.5's per-flow counters as FLOW_DESC (its OXS-based FLOW_STATS
    # request is refused with BAD_STAT)
    @set_ev_cls(ofp_event.EventOFPFlowDescStatsReply, MAIN_DISPATCHER)
    def on_flow_stats(self, ev):
        name = self.names.get(ev.msg.datapath.id)
        now = time.monotonic()
        for stat in ev.msg.body:
            m = stat.match
            try:
                key = policies.FiveTuple(m["ipv4_src"], m["ipv4_dst"], 6, m["tcp_src"], m["tcp_dst"])
            except KeyError:
                continue
            flow = self.flows.get(key)
            entry = flow and policies.ingress_of(self.fwd, flow.seen)
            if entry and entry[0] == name and stat.stats is not None:
                policies.update_rate(flow, dict(stat.stats.fields)["byte_count"], now)

    # ---- pushing computed state ----
    def wanted_base(self) -> dict[tuple, object]:
        """Routes and per-port core rules, as policies say; sets self.fwd."""
        routes = []
        for ip, entry in self.learned.items():
            routes += routes_to(self.fabric, ip, entry["mac"], entry["at"], frozenset(self.down))
        core = policies.core_rules(self.fabric, routes) if self.policy["core"] == "per-port" else []
        if self.policy["policy"] == "static":
            routes = policies.static_routes(self.fabric, routes, self.policy["matrix"], core)
        self.fwd = policies.Forwarding(self.fabric, routes, core)
        wanted: dict[tuple, object] = {("route", r.switch, r.ip): r for r in routes}
        wanted.update({("core", c.switch, c.in_port, c.ip): c for c in core})
        return wanted

    def wanted_flows(self) -> dict[tuple, object]:
        """Per-flow rules: a pinned port (int), or the route to follow (a counting rule)."""
        wanted = {}
        for (sw, key), port in policies.flow_rules(self.flows.values(), self.fwd).items():
            route = self.fwd.routes.get((sw, key.dst))
            if route is not None:
                wanted[("flow", sw, key)] = port if port is not None else route
        return wanted

    def sync(self):
        """Recompute every rule and push the difference."""
        self.base = self.wanted_base()
        if self.adaptive:
            policies.prune(self.flows, self.fwd, frozenset(self.down), time.monotonic(), FLOW_IDLE_S)
        self.push({**self.base, **self.wanted_flows()})

    def sync_flows(self):
        """Push the per-flow rules only (routes unchanged)."""
        self.push({**self.base, **self.wanted_flows()})

    def push(self, wanted: dict[tuple, object]):
        for key, value in wanted.items():
            dp = self.datapaths.get(key[1])
            if dp is not None and self.installed.get(key) != value:
                self.install(dp, key, value)
                self.installed[key] = value
        for key in [k for k in self.installed if k not in wanted]:
            dp = self.datapaths.get(key[1])
            if dp is not None:
                priority, match = self.rule_match(dp, key)
                dp.send_msg(dp.ofproto_parser.OFPFlowMod(
                    dp, table_id=TABLE_FORWARD, command=dp.ofproto.OFPFC_DELETE_STRICT,
                    priority=priority, out_port=dp.ofproto.OFPP_ANY, out_group=dp.ofproto.OFPG_ANY,
                    match=match))
            del self.installed[key]
        self.write_status()

    def rule_match(self, dp, key: tuple):
        parser = dp.ofproto_parser
        kind = key[0]
        if kind == "route":
            return PRIO_ROUTE, parser.OFPMatch(eth_type=0x0800, ipv4_dst=key[2])
        if kind == "core":
            return PRIO_CORE, parser.OFPMatch(in_port=key[2], eth_type=0x0800, ipv4_dst=key[3])
        f = key[2]
        return PRIO_PINNED, parser.OFPMatch(eth_type=0x0800, ip_proto=f.proto, ipv4_src=f.src,
                                            ipv4_dst=f.dst, tcp_src=f.sport, tcp_dst=f.dport)

    def install(self, dp, key: tuple, value):
        parser = dp.ofproto_parser
        priority, match = self.rule_match(dp, key)
        cookie = 0
        if key[0] == "route":
            actions = self.route_actions(dp, value)
        elif key[0] == "core":
            fallback = self.group_for(dp, value.switch, value.fallback)
            actions = [parser.OFPActionGroup(self.failover_group(dp, value.switch, value.port, fallback))]
        else:
            cookie = FLOW_COOKIE
            actions = ([parser.OFPActionOutput(value)] if isinstance(value, int)
                       else self.route_actions(dp, value))
        self.add_flow(dp, priority, match, actions, cookie=cookie)

    def route_actions(self, dp, route: Route) -> list:
        parser = dp.ofproto_parser
        actions = []
        if route.deliver_mac:
            actions += [parser.OFPActionSetField(eth_src=GATEWAY_MAC),
                        parser.OFPActionSetField(eth_dst=route.deliver_mac)]
        if len(route.ports) == 1 or route.deliver_mac:
            actions.append(parser.OFPActionOutput(route.ports[0]))
        else:
            actions.append(parser.OFPActionGroup(self.group_for(dp, route.switch, route.ports)))
        return actions

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
            basis = ecmp_basis(self.policy["ecmp"], self.fabric.switches[switch])
            props = [ofp15.hash_selection_property(FIVE_TUPLE, basis)]
            dp.send_msg(parser.OFPGroupMod(dp, command=ofp.OFPGC_ADD, type_=ofp.OFPGT_SELECT,
                                           group_id=gid, buckets=buckets, properties=props))
        return known[ports]

    def failover_group(self, dp, switch: str, port: int, fallback_gid: int) -> int:
        """A fast-failover group: `port` while it is up, else the select group `fallback_gid`."""
        known = self.groups.setdefault(switch, {})
        key = ("ff", port, fallback_gid)
        if key not in known:
            ofp, parser = dp.ofproto, dp.ofproto_parser
            gid = known[key] = len(known) + 1
            buckets = [
                parser.OFPBucket(bucket_id=0, actions=[parser.OFPActionOutput(port)], properties=[
                    parser.OFPGroupBucketPropWatch(type_=ofp.OFPGBPT_WATCH_PORT, watch=port)]),
                # OVS wants liveness on every fast-failover bucket: the select group is live
                # while any of its ports is
                parser.OFPBucket(bucket_id=1, actions=[parser.OFPActionGroup(fallback_gid)], properties=[
                    parser.OFPGroupBucketPropWatch(type_=ofp.OFPGBPT_WATCH_GROUP, watch=fallback_gid)]),
            ]
            dp.send_msg(parser.OFPGroupMod(dp, command=ofp.OFPGC_ADD, type_=ofp.OFPGT_FF,
                                           group_id=gid, buckets=buckets))
        return known[key]

    def add_flow(self, dp, priority, match, actions, table=TABLE_FORWARD, goto=None, cookie=0):
        parser, ofp = dp.ofproto_parser, dp.ofproto
        inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)] if actions else []
        if goto is not None:
            inst.append(parser.OFPInstructionGotoTable(goto))
        dp.send_msg(parser.OFPFlowMod(dp, table_id=table, priority=priority, match=match,
                                      instructions=inst, cookie=cookie))

    def write_status(self):
        path = self.spec.get("status")
        if not path:
            return
        static = Counter(k[1] for k in self.installed if k[0] in ("route", "core"))
        status = {
            "connected": sorted(self.datapaths),
            "learned": {ip: sorted(map(list, e["at"])) for ip, e in self.learned.items()},
            "down": sorted(map(list, self.down)),
            "policy": {k: v for k, v in self.policy.items() if k != "matrix"},
            "routes": sum(1 for k in self.installed if k[0] == "route"),
            "core_rules": sum(1 for k in self.installed if k[0] == "core"),
            # every rule the controller keeps on a switch regardless of traffic
            "routes_per_switch": dict(static),
        }
        if self.adaptive:
            status["adaptive"] = {
                "flows": len(self.flows),
                "pinned": sum(1 for f in self.flows.values() if f.pins),
                "flow_rules": sum(1 for k in self.installed if k[0] == "flow"),
                "moves": self.moves[-50:],
                "busy_links": {f"{sw}:{port}": round(rate / self.capacity[(sw, port)], 3)
                               for (sw, port), rate in sorted(self.port_rate.items())
                               if rate >= 0.5 * self.capacity[(sw, port)]},
                "flow_rates": {":".join(map(str, k)): round(f.rate, 3) for k, f in self.flows.items()},
            }
        with open(path + ".tmp", "w") as f:
            json.dump(status, f)
        os.replace(path + ".tmp", path)


def gateway_arp_reply(parser, ofp) -> list:
    """Actions that turn an ARP request for the gateway into its reply, sent back where it came."""
    def copy(src, dst, bits):
        return parser.OFPActionCopyField(n_bits=bits, oxm_ids=[src, dst])
    return [copy("eth_src", "eth_dst", 48),
            parser.OFPActionSetField(eth_src=GATEWAY_MAC),
            parser.OFPActionSetField(arp_op=2),
            copy("arp_sha", "arp_tha", 48),
            copy("arp_spa", "arp_tpa", 32),
            parser.OFPActionSetField(arp_sha=GATEWAY_MAC),
            parser.OFPActionSetField(arp_spa=GATEWAY_IP),
            parser.OFPActionOutput(ofp.OFPP_IN_PORT)]
