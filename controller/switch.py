"""One switch as the controller writes to it: computed rules become FLOW_MODs and groups.

The rule state (controller/rulestate.py) decides *what* a switch holds (routes, per-port core
rules, per-flow rules, the packets a policy samples: see testbed.model.policies); this module
only encodes it in OpenFlow 1.5 for Open vSwitch, in the pipeline of testbed/model/contract.py.

Rules are named by the keys of contract.py: RouteKey -> Route, CoreKey -> CoreRule,
FlowKey -> an output port (int) or the Route to follow (a counting rule).
"""
from __future__ import annotations

from collections.abc import Iterable

from controller import ovs_groups
from testbed.model.contract import (
    FLOW_COOKIE,
    PRIO_ARP,
    PRIO_CORE,
    PRIO_GATEWAY_ARP,
    PRIO_MISS,
    PRIO_PINNED,
    PRIO_PROBE,
    PRIO_ROUTE,
    PRIO_SAMPLE,
    PROBE_ETHERTYPE,
    TABLE_CLASSIFY,
    TABLE_FORWARD,
    TABLE_USER,
    CoreKey,
    RouteKey,
    RuleKey,
)
from testbed.model.fabric import GATEWAY_IP, GATEWAY_MAC
from testbed.model.policies import Sample
from testbed.model.routing import FIVE_TUPLE, Route, ecmp_basis


class SwitchWriter:
    def __init__(self, dp, switch, ecmp_mode: str):
        self.dp, self.name = dp, switch.name
        self.ofp, self.parser = dp.ofproto, dp.ofproto_parser
        self.basis = ecmp_basis(ecmp_mode, switch)
        self.groups: dict[tuple, int] = {}    # group key -> group id

    def reset(self, samples: Iterable[Sample] = (), beside: bool = False) -> None:
        """Wipe the switch and install the classifying table (table 0), with the policy's
        `samples` (packets copied to the controller, then forwarded). `beside`: a user's app
        runs beside ours, so only our tables are wiped and table 1's misses go on to its table."""
        ofp, parser = self.ofp, self.parser
        for table in (TABLE_CLASSIFY, TABLE_FORWARD) if beside else (ofp.OFPTT_ALL,):
            self.dp.send_msg(parser.OFPFlowMod(self.dp, command=ofp.OFPFC_DELETE, table_id=table,
                                               out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
                                               match=parser.OFPMatch()))
        self.dp.send_msg(parser.OFPGroupMod(self.dp, command=ofp.OFPGC_DELETE, group_id=ofp.OFPG_ALL))
        self.groups = {}
        # a wiring probe is reported where it came in, and goes no further
        self.add_flow(PRIO_PROBE, parser.OFPMatch(eth_type=PROBE_ETHERTYPE),
                      [parser.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)],
                      table=TABLE_CLASSIFY)
        # ARP goes to the controller; the rest on to forwarding, where unrouted packets drop.
        self.add_flow(PRIO_ARP, parser.OFPMatch(eth_type=0x0806),
                      [parser.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)],
                      table=TABLE_CLASSIFY)
        self.add_flow(PRIO_GATEWAY_ARP, parser.OFPMatch(eth_type=0x0806, arp_op=1, arp_tpa=GATEWAY_IP),
                      gateway_arp_reply(parser, ofp), table=TABLE_CLASSIFY)
        for sample in samples:
            self.add_flow(PRIO_SAMPLE, parser.OFPMatch(**sample.match),
                          [parser.OFPActionOutput(ofp.OFPP_CONTROLLER, sample.bytes)],
                          table=TABLE_CLASSIFY, goto=TABLE_FORWARD)
        self.add_flow(PRIO_MISS, parser.OFPMatch(), [], table=TABLE_CLASSIFY, goto=TABLE_FORWARD)
        if beside:
            self.add_flow(PRIO_MISS, parser.OFPMatch(), [], table=TABLE_FORWARD, goto=TABLE_USER)

    # ---- rules ----
    def rule_match(self, key: RuleKey):
        parser = self.parser
        if isinstance(key, RouteKey):
            return PRIO_ROUTE, parser.OFPMatch(eth_type=0x0800, ipv4_dst=key.ip)
        if isinstance(key, CoreKey):
            return PRIO_CORE, parser.OFPMatch(in_port=key.in_port, eth_type=0x0800, ipv4_dst=key.ip)
        f = key.flow   # a FlowKey
        return PRIO_PINNED, parser.OFPMatch(eth_type=0x0800, ip_proto=f.proto, ipv4_src=f.src,
                                            ipv4_dst=f.dst, tcp_src=f.sport, tcp_dst=f.dport)

    def install(self, key: RuleKey, value) -> None:
        priority, match = self.rule_match(key)
        cookie = 0
        if isinstance(key, RouteKey):
            actions = self.route_actions(value)
        elif isinstance(key, CoreKey):
            fallback = self.select_group(value.fallback)
            actions = [self.parser.OFPActionGroup(self.failover_group(value.port, fallback))]
        else:   # a FlowKey
            cookie = FLOW_COOKIE
            actions = ([self.parser.OFPActionOutput(value)] if isinstance(value, int)
                       else self.route_actions(value))
        self.add_flow(priority, match, actions, cookie=cookie)

    def remove(self, key: RuleKey) -> None:
        ofp = self.ofp
        priority, match = self.rule_match(key)
        self.dp.send_msg(self.parser.OFPFlowMod(
            self.dp, table_id=TABLE_FORWARD, command=ofp.OFPFC_DELETE_STRICT, priority=priority,
            out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY, match=match))

    def route_actions(self, route: Route) -> list:
        parser = self.parser
        actions = []
        if route.deliver_mac:
            actions += [parser.OFPActionSetField(eth_src=GATEWAY_MAC),
                        parser.OFPActionSetField(eth_dst=route.deliver_mac)]
        if len(route.ports) == 1 or route.deliver_mac:
            actions.append(parser.OFPActionOutput(route.ports[0]))
        else:
            actions.append(parser.OFPActionGroup(self.select_group(route.ports)))
        return actions

    # ---- groups ----
    def select_group(self, ports: tuple[int, ...]) -> int:
        """An ECMP select group over `ports` hashing the 5-tuple (made once per port set)."""
        if ports not in self.groups:
            ofp, parser = self.ofp, self.parser
            gid = self.groups[ports] = len(self.groups) + 1
            buckets = [parser.OFPBucket(
                bucket_id=i, actions=[parser.OFPActionOutput(p)],
                # a bucket whose port is down is skipped: failover without the controller
                properties=[parser.OFPGroupBucketPropWatch(type_=ofp.OFPGBPT_WATCH_PORT, watch=p)])
                for i, p in enumerate(ports)]
            props = [ovs_groups.hash_selection_property(FIVE_TUPLE, self.basis)]
            self.dp.send_msg(parser.OFPGroupMod(self.dp, command=ofp.OFPGC_ADD, type_=ofp.OFPGT_SELECT,
                                                group_id=gid, buckets=buckets, properties=props))
        return self.groups[ports]

    def failover_group(self, port: int, fallback_gid: int) -> int:
        """A fast-failover group: `port` while it is up, else the select group `fallback_gid`."""
        key = ("ff", port, fallback_gid)
        if key not in self.groups:
            ofp, parser = self.ofp, self.parser
            gid = self.groups[key] = len(self.groups) + 1
            buckets = [
                parser.OFPBucket(bucket_id=0, actions=[parser.OFPActionOutput(port)], properties=[
                    parser.OFPGroupBucketPropWatch(type_=ofp.OFPGBPT_WATCH_PORT, watch=port)]),
                # OVS wants liveness on every fast-failover bucket: the select group is live
                # while any of its ports is
                parser.OFPBucket(bucket_id=1, actions=[parser.OFPActionGroup(fallback_gid)], properties=[
                    parser.OFPGroupBucketPropWatch(type_=ofp.OFPGBPT_WATCH_GROUP, watch=fallback_gid)]),
            ]
            self.dp.send_msg(parser.OFPGroupMod(self.dp, command=ofp.OFPGC_ADD, type_=ofp.OFPGT_FF,
                                                group_id=gid, buckets=buckets))
        return self.groups[key]

    def add_flow(self, priority, match, actions, table=TABLE_FORWARD, goto=None, cookie=0) -> None:
        parser, ofp = self.parser, self.ofp
        inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)] if actions else []
        if goto is not None:
            inst.append(parser.OFPInstructionGotoTable(goto))
        self.dp.send_msg(parser.OFPFlowMod(self.dp, table_id=table, priority=priority, match=match,
                                           instructions=inst, cookie=cookie))


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
