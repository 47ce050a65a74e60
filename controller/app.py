"""The fabric controller: an app written against the Ryu API (run on os-ken).

It only pushes what testbed.model.routing and testbed.model.policies compute and reacts to events:
- switch connects: wipe it, install the classifying table, then every rule it should hold;
  a disconnect is recorded, and so is a reconnect (a new connection for a connected DPID: only
  ovs-vswitchd can connect, see launcher.py, so it is the switch, and the old one is dropped);
- gratuitous ARP from a host port: learn ip -> (switch, port, mac); that NIC's rules go stale;
- a wiring probe (testbed/measure/wiring.py): reported as a postcard (switch, in port, probe)
  appended to the run's sightings file;
- ARP request for the gateway: answered by the switch itself, with a rule installed at connect
  (as a ToR's own CPU would answer; a host's probe then tests its link, not the controller);
- port status: mark the port up or down; every NIC's rules go stale;
- a packet the policy samples (its `samples` hook: adaptive's TCP SYN/FIN/RST): handed to the
  policy's tracker; every poll interval of a tracker: ask every switch for its port counters
  and its per-flow counters, hand them over, push the per-flow rules the tracker wants.

Nothing here depends on which policy runs: the policy object (testbed.model.policies, chosen
by the run's routing options) computes the routes and answers the hooks.

Events only mark what went stale; a settle step SETTLE_S later recomputes the stale NICs'
rules (only those: routes toward one NIC do not depend on another's) and pushes the
difference, so a burst of announcements or port changes costs one computation per NIC, not one
of the whole fabric per event. The status file the testbed polls is written at most every
STATUS_MIN_S; its record, and the pipeline's tables and priorities, are the contract of
testbed/model/contract.py. Rule encoding: controller/switch.py.
"""
from __future__ import annotations

import json
import os
import time
from collections import Counter

from os_ken.base import app_manager
from os_ken.controller import event, ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, DEAD_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib import hub
from os_ken.lib.packet import arp, ethernet, ipv4, packet, tcp
from os_ken.ofproto import ofproto_v1_5

from controller.switch import SwitchWriter
from testbed.core import files
from testbed.model import families, policies
from testbed.model.contract import FLOW_COOKIE, PROBE_ETHERTYPE, TABLE_FORWARD, ControllerStatus
from testbed.model.fabric import GATEWAY_IP
from testbed.model.routing import routes_to

SPEC_ENV = "HPN_TESTBED_SPEC"
SETTLE_S = 0.02          # how long events may pile up before their rules are recomputed
STATUS_MIN_S = 0.1       # the status file is rewritten at most this often


class EventTick(event.EventBase):
    """Poll time (a policy with a tracker): sent by the app's ticker thread to its own event loop."""


class EventSettle(event.EventBase):
    """Recompute what went stale: sent SETTLE_S after the first event that made it stale."""


class FabricController(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_5.OFP_VERSION]   # select-group hashing needs OpenFlow 1.5

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        with open(os.environ[SPEC_ENV]) as f:
            self.spec = json.load(f)
        self.fabric = families.from_spec(self.spec)
        if self.spec.get("policy_file"):   # a policy defined outside the testbed (registry.py)
            policies.load_file(self.spec["policy_file"])
        # a user's app runs beside ours: tables 2 and on are its (testbed/emulation/controller_app.py)
        self.beside = bool((self.spec.get("controller_app") or {}).get("beside"))
        self.routing = policies.normalize(self.fabric, self.spec.get("routing", {}))
        policy, opts = self.routing.policy, self.routing.options
        self.samples = policy.samples(opts)
        self.tracker = policy.tracker(self.fabric, opts)
        self.names = {sw.dpid: sw.name for sw in self.fabric.switches.values()}
        self.switches: dict[str, SwitchWriter] = {}   # connected switches by name
        self.lost: list[str] = []                     # switches whose connection dropped
        self.learned: dict[str, dict] = {}   # ip -> {"mac": str, "at": set[(switch, port)]}
        self.down: set[tuple[str, int]] = set()
        self.ports: dict[str, set[tuple[str, int]]] = {sw: set() for sw in self.fabric.switches}
        for l in self.fabric.links:
            self.ports[l.b].add((l.b, l.b_port))
            if l.a in self.ports:
                self.ports[l.a].add((l.a, l.a_port))
        # switches with every port down: nothing reaches them, so their writes wait until a
        # port is back (a failed ToR of a segment would otherwise take 1,088 route deletions
        # and as many additions at its repair, which a userspace datapath works through slowly)
        self.isolated: set[str] = set()
        self.wanted: dict[str, dict[tuple, object]] = {}   # ip -> its route and core rules
        self.installed: dict[tuple, object] = {}           # key -> value, on connected switches
        self.stale: set[str] = set()
        self.stale_all = False
        self.settle_pending = False
        self.status_written = 0.0
        self._fwd = None
        if self.tracker is not None:
            self.threads.append(hub.spawn(self._ticker))
        self.write_status()

    # ---- connections ----
    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def on_switch(self, ev):
        dp = ev.msg.datapath
        name = self.names.get(dp.id)
        if name is None:
            self.logger.warning("refusing unknown datapath %016x", dp.id)
            dp.close()
            return
        old = self.switches.get(name)
        if old is not None and old.dp is not dp:
            self.logger.warning("switch %s reconnected: the old connection is dropped", name)
            self.lost.append(name)
            old.dp.close()
        writer = SwitchWriter(dp, self.fabric.switches[name], self.routing.ecmp)
        writer.reset(self.samples, beside=self.beside)
        self.installed = {k: v for k, v in self.installed.items() if k[1] != name}
        self.switches[name] = writer
        for rules in self.wanted.values():
            for key, value in rules.items():
                if key[1] == name:
                    self.put(key, value)
        self.push_flows()
        self.write_status(force=True)

    @set_ev_cls(ofp_event.EventOFPStateChange, DEAD_DISPATCHER)
    def on_disconnect(self, ev):
        dp = ev.datapath
        name = self.names.get(dp.id)
        writer = self.switches.get(name)
        if writer is None or writer.dp is not dp:
            return   # a refused or unknown connection
        del self.switches[name]
        self.installed = {k: v for k, v in self.installed.items() if k[1] != name}
        self.lost.append(name)
        self.logger.warning("switch %s disconnected", name)
        self.write_status(force=True)

    # ---- events that make rules stale ----
    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def on_packet_in(self, ev):
        msg = ev.msg
        name = self.names.get(msg.datapath.id)
        if name is None:
            return
        pkt = packet.Packet(msg.data)
        in_port = msg.match["in_port"]
        eth = pkt.get_protocol(ethernet.ethernet)
        if eth is not None and eth.ethertype == PROBE_ETHERTYPE:
            self.postcard(name, in_port, msg.data[14:])
            return
        a = pkt.get_protocol(arp.arp)
        if a is None:
            if self.tracker is not None:
                self.on_tcp_sample(name, in_port, pkt)
            return
        if a.src_ip == a.dst_ip and a.src_ip != GATEWAY_IP:   # gratuitous: a NIC announces itself
            entry = self.learned.setdefault(a.src_ip, {"mac": a.src_mac, "at": set()})
            if (name, in_port) not in entry["at"] or entry["mac"] != a.src_mac:
                entry["mac"] = a.src_mac
                entry["at"].add((name, in_port))
                self.logger.info("learned %s at %s port %d", a.src_ip, name, in_port)
                self.mark_stale(a.src_ip)

    # a port's state counts from the moment the switch connects: os-ken asks every switch for
    # its ports (the reply arrives while it is still in CONFIG), and a port can change state
    # before os-ken moves the switch to MAIN (bring-up adds ports as soon as we listen)
    @set_ev_cls(ofp_event.EventOFPPortDescStatsReply, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def on_port_desc(self, ev):
        msg = ev.msg
        ofp = msg.datapath.ofproto
        for desc in msg.body:
            self.port_state(self.names.get(msg.datapath.id), desc.port_no,
                            bool(desc.state & ofp.OFPPS_LINK_DOWN))

    @set_ev_cls(ofp_event.EventOFPPortStatus, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def on_port_status(self, ev):
        msg = ev.msg
        ofp = msg.datapath.ofproto
        self.port_state(self.names.get(msg.datapath.id), msg.desc.port_no,
                        msg.reason == ofp.OFPPR_DELETE or bool(msg.desc.state & ofp.OFPPS_LINK_DOWN))

    def port_state(self, name: str | None, port_no: int, dead: bool) -> None:
        """A fabric port's carrier as the switch reported it; a change makes every route stale.
        Ports the fabric does not know (the bridge's own, a user's) change nothing."""
        port = (name, port_no)
        if port not in self.ports.get(name, ()) or dead == (port in self.down):
            return
        (self.down.add if dead else self.down.discard)(port)
        self.logger.info("port %s %d %s", name, port_no, "down" if dead else "up")
        self.mark_stale(None)

    @set_ev_cls(ofp_event.EventOFPErrorMsg, MAIN_DISPATCHER)
    def on_error(self, ev):
        msg = ev.msg
        self.logger.warning("OpenFlow error from %s: type %d code %d (request xid %d)",
                            self.names.get(msg.datapath.id), msg.type, msg.code, msg.xid)

    def postcard(self, switch: str, in_port: int, payload: bytes) -> None:
        """Where a wiring probe came in: one JSON line in the run's sightings file."""
        path = self.spec.get("sightings")
        if path:
            probe = payload.split(b"\0", 1)[0].decode(errors="replace")
            with open(path, "a") as f:
                f.write(json.dumps({"probe": probe, "switch": switch, "in_port": in_port}) + "\n")

    def mark_stale(self, ip: str | None) -> None:
        """`ip`'s rules (None: every NIC's) need recomputing; settle soon."""
        if ip is None:
            self.stale_all = True
        else:
            self.stale.add(ip)
        if not self.settle_pending:
            self.settle_pending = True
            hub.spawn(self._settle_later)

    def _settle_later(self):
        hub.sleep(SETTLE_S)
        self.send_event(self.name, EventSettle())

    # ---- recomputing and pushing ----
    @set_ev_cls(EventSettle)
    def on_settle(self, ev):
        self.settle_pending = False
        everything = self.stale_all or self.routing.policy.whole_fabric
        ips = list(self.learned) if everything else sorted(self.stale)
        ports_changed = self.stale_all      # (a port event marks every NIC stale)
        self.stale, self.stale_all = set(), False
        was_isolated = self.isolated
        if ports_changed:   # not on every learned NIC: a pass over every port of the fabric
            self.isolated = {sw for sw, ports in self.ports.items() if ports and ports <= self.down}
        for ip, rules in self.compute(ips, everything).items():
            self.replace(ip, rules)
        self.drop_unwanted(was_isolated - self.isolated)
        self._fwd = None
        if self.tracker is not None:
            self.tracker.prune(self.fwd, frozenset(self.down), time.monotonic())
            self.push_flows()
        self.write_status()

    def compute(self, ips: list[str], everything: bool) -> dict[str, dict[tuple, object]]:
        """The route and core rules of each NIC in `ips`, as the routing options say (`everything`:
        `ips` are every learned NIC)."""
        down = frozenset(self.down)
        routes = [r for ip in ips
                  for r in routes_to(self.fabric, ip, self.learned[ip]["mac"], self.learned[ip]["at"], down)]
        core = self.routing.core_rules(self.fabric, routes)
        routes = self.routing.routes(self.fabric, routes, core)
        rules: dict[str, dict[tuple, object]] = {ip: {} for ip in ips}
        for r in routes:
            rules[r.ip][("route", r.switch, r.ip)] = r
        for c in core:
            rules[c.ip][("core", c.switch, c.in_port, c.ip)] = c
        return rules

    def replace(self, ip: str, rules: dict[tuple, object]) -> None:
        """Make `ip`'s rules on the switches `rules`: install what changed, delete what went."""
        for key in self.wanted.get(ip, {}).keys() - rules.keys():
            self.take(key)
        for key, value in rules.items():
            self.put(key, value)
        self.wanted[ip] = rules

    def drop_unwanted(self, switches: set[str]) -> None:
        """Remove from `switches` (back from isolation) the route and core rules that went
        unwanted while their removal waited."""
        if not switches:
            return
        wanted = {k for rules in self.wanted.values() for k in rules if k[1] in switches}
        for key in [k for k in self.installed if k[1] in switches and k[0] != "flow" and k not in wanted]:
            self.take(key)

    def put(self, key: tuple, value) -> None:
        writer = self.switches.get(key[1])
        if writer is not None and key[1] not in self.isolated and self.installed.get(key) != value:
            writer.install(key, value)
            self.installed[key] = value

    def take(self, key: tuple) -> None:
        if key[1] in self.isolated:
            return   # it stays until the switch is back (drop_unwanted)
        writer = self.switches.get(key[1])
        if writer is not None and key in self.installed:
            writer.remove(key)
        self.installed.pop(key, None)

    @property
    def fwd(self) -> policies.Forwarding:
        """Every switch's forwarding toward every NIC (built when a tracker asks)."""
        if self._fwd is None:
            rules = [(k[0], v) for r in self.wanted.values() for k, v in r.items()]
            self._fwd = policies.Forwarding(self.fabric, [v for kind, v in rules if kind == "route"],
                                            [v for kind, v in rules if kind == "core"])
        return self._fwd

    def push_flows(self) -> None:
        """Per-flow rules as the policy's tracker wants them."""
        if self.tracker is None:
            return
        wanted = self.tracker.wanted(self.fwd)
        for key in [k for k in self.installed if k[0] == "flow" and k not in wanted]:
            self.take(key)
        for key, value in wanted.items():
            self.put(key, value)

    # ---- a policy's tracker ----
    def _ticker(self):
        while True:
            hub.sleep(self.tracker.interval)
            self.send_event(self.name, EventTick())

    def on_tcp_sample(self, name: str, in_port: int, pkt) -> None:
        ip, seg = pkt.get_protocol(ipv4.ipv4), pkt.get_protocol(tcp.tcp)
        if ip is None or seg is None:
            return
        key = policies.FiveTuple(ip.src, ip.dst, 6, seg.src_port, seg.dst_port)
        if self.tracker.on_sample(name, in_port, key, seg.bits, time.monotonic()):
            self.push_flows()

    @set_ev_cls(EventTick)
    def on_tick(self, ev):
        for name, writer in self.switches.items():
            dp, ofp, parser = writer.dp, writer.ofp, writer.parser
            dp.send_msg(parser.OFPPortStatsRequest(dp, 0, ofp.OFPP_ANY))
            if any(k[0] == "flow" and k[1] == name for k in self.installed):
                dp.send_msg(parser.OFPFlowDescStatsRequest(
                    dp, table_id=TABLE_FORWARD, cookie=FLOW_COOKIE, cookie_mask=0xFFFFFFFFFFFFFFFF))
        now = time.monotonic()
        dropped = self.tracker.prune(self.fwd, frozenset(self.down), now)
        if self.tracker.plan(self.fwd, now, self.logger.info) or dropped:
            self.push_flows()
        self.write_status()

    @set_ev_cls(ofp_event.EventOFPPortStatsReply, MAIN_DISPATCHER)
    def on_port_stats(self, ev):
        if self.tracker is not None:
            counters = [(stat.port_no, stat.tx_bytes) for stat in ev.msg.body]
            self.tracker.on_port_counters(self.names.get(ev.msg.datapath.id), counters, time.monotonic())

    # OVS answers OpenFlow 1.5's per-flow counters as FLOW_DESC (its OXS-based FLOW_STATS
    # request is refused with BAD_STAT)
    @set_ev_cls(ofp_event.EventOFPFlowDescStatsReply, MAIN_DISPATCHER)
    def on_flow_stats(self, ev):
        if self.tracker is not None:
            self.tracker.on_flow_counters(self.names.get(ev.msg.datapath.id), flow_counters(ev.msg.body),
                                          self.fwd, time.monotonic())

    # ---- status ----
    def write_status(self, force: bool = False):
        path = self.spec.get("status")
        now = time.monotonic()
        if not path:
            return
        if not force and now - self.status_written < STATUS_MIN_S:
            self.mark_stale_status()
            return
        self.status_written = now
        installed = Counter(k[0] for k in self.installed)
        status = ControllerStatus(
            connected=tuple(sorted(self.switches)), lost=tuple(self.lost),
            learned={ip: tuple(sorted(e["at"])) for ip, e in self.learned.items()},
            down=tuple(sorted(self.down)), policy=self.routing.to_json(),
            routes=installed["route"], core_rules=installed["core"],
            # every rule the controller keeps on a switch regardless of traffic
            routes_per_switch=dict(Counter(k[1] for k in self.installed if k[0] in ("route", "core"))),
            isolated=tuple(sorted(self.isolated)),   # their rules wait for a port to come back
            settled=not (self.stale or self.stale_all),
            tracker=None if self.tracker is None else self.tracker.status(installed["flow"]))
        files.write_json(os.path.dirname(path), os.path.basename(path), status.to_json())   # atomic

    def mark_stale_status(self) -> None:
        """A status write was skipped: make sure a settle writes it soon."""
        if not self.settle_pending:
            self.settle_pending = True
            hub.spawn(self._settle_later)


def flow_counters(body) -> list[tuple[policies.FiveTuple, int]]:
    """(5-tuple, byte count) of each per-flow rule in a FLOW_DESC reply."""
    counters = []
    for stat in body:
        m = stat.match
        try:
            key = policies.FiveTuple(m["ipv4_src"], m["ipv4_dst"], 6, m["tcp_src"], m["tcp_dst"])
        except KeyError:
            continue
        if stat.stats is not None:
            counters.append((key, dict(stat.stats.fields)["byte_count"]))
    return counters
