"""The fabric controller, an app written against the Ryu API (run on os-ken): only a shim, as
Faucet's is between Ryu and its valve. os-ken's events become calls on one RuleState
(controller/rulestate.py); what those return is sent as OpenFlow (ofmsgs.py, switch.py).

Of its own it keeps the connections (only ovs-vswitchd can connect, see launcher.py: a new one
for a connected DPID is that switch reconnecting), the timing (a settle SETTLE_S after an event
left rules stale, so events pile up; a tracker's tick) and the run's files (runfiles.py).
"""
from __future__ import annotations

import time

from os_ken.base import app_manager
from os_ken.controller import event, ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, DEAD_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib import hub
from os_ken.ofproto import ofproto_v1_5

from controller import heartbeat, ofmsgs, runfiles
from controller.rulestate import RuleState
from controller.switch import SwitchWriter

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
        self.spec = runfiles.read_spec()
        self.state = RuleState.from_spec(self.spec, self.logger)
        self.state.working = self.working
        self.names = {sw.dpid: sw.name for sw in self.state.fabric.switches.values()}
        self.writers: dict[str, SwitchWriter] = {}   # connected switches by name
        self.settle_pending = False
        self.status = runfiles.StatusFile(self.spec.get("status"), STATUS_MIN_S)
        if self.state.tracker is not None:
            self.threads.append(hub.spawn(self._ticker))
        self.write_status()

    def send(self, msgs=()) -> None:
        """Send the rule state's messages; if rules are left stale, settle soon."""
        for msg in msgs:
            writer = self.writers[msg.switch]
            self.wait_for_room(writer.dp)
            ofmsgs.send(writer, msg)
            self.working()
        if not self.state.settled:
            self.settle_soon()

    def working(self) -> None:
        """Long work in a handler (a whole fabric's rules computed, or sent) makes progress: the
        heartbeat must not take this loop for hung (controller/heartbeat.py)."""
        heartbeat.working(self)

    def wait_for_room(self, dp) -> None:
        """Open vSwitch takes our messages at its own pace (os-ken queues 16 a switch, then
        send_msg waits): while the queue is full, wait here saying we are working, or a busy
        switch taking a whole fabric's rules would pass for a hung loop."""
        while dp.is_active and dp.send_q and dp.send_q.full():
            self.working()
            hub.sleep(0.01)

    # ---- connections ----
    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def on_switch(self, ev):
        dp = ev.msg.datapath
        name = self.names.get(dp.id)
        if name is None:
            self.logger.warning("refusing unknown datapath %016x", dp.id)
            return dp.close()
        old = self.writers.get(name)
        if old is not None and old.dp is not dp:
            self.logger.warning("switch %s reconnected: the old connection is dropped", name)
            self.state.switch_down(name)
            old.dp.close()
        self.writers[name] = SwitchWriter(dp, self.state.fabric.switches[name], self.state.routing.ecmp)
        self.send(self.state.switch_up(name))
        self.write_status(force=True)

    @set_ev_cls(ofp_event.EventOFPStateChange, DEAD_DISPATCHER)
    def on_disconnect(self, ev):
        name = self.names.get(ev.datapath.id)
        writer = self.writers.get(name)
        if writer is None or writer.dp is not ev.datapath:
            return   # a refused or unknown connection
        del self.writers[name]
        self.state.switch_down(name)
        self.logger.warning("switch %s disconnected", name)
        self.write_status(force=True)

    # ---- what switches tell ----
    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def on_packet_in(self, ev):
        msg = ev.msg
        name, in_port = self.names.get(msg.datapath.id), msg.match["in_port"]
        seen, msgs = ofmsgs.read_packet(msg.data) if name is not None else None, ()
        if isinstance(seen, ofmsgs.Probe):
            runfiles.postcard(self.spec.get("sightings"), name, in_port, seen.probe)
        elif isinstance(seen, ofmsgs.Arp):
            self.state.arp(name, in_port, *seen)
        elif isinstance(seen, ofmsgs.TcpSegment):
            msgs = self.state.tcp_sample(name, in_port, seen.key, seen.flags, time.monotonic())
        self.send(msgs)

    # a port's state counts from the moment the switch connects: os-ken asks every switch for
    # its ports (the reply arrives while it is still in CONFIG), and a port can change state
    # before os-ken moves the switch to MAIN (bring-up adds ports as soon as we listen)
    @set_ev_cls([ofp_event.EventOFPPortDescStatsReply, ofp_event.EventOFPPortStatus],
                [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def on_ports(self, ev):
        name = self.names.get(ev.msg.datapath.id)
        for port_no, dead in ofmsgs.ports_reported(ev.msg):
            self.state.port_state(name, port_no, dead)
        self.send()

    @set_ev_cls(ofp_event.EventOFPErrorMsg, MAIN_DISPATCHER)
    def on_error(self, ev):
        m = ev.msg
        self.logger.warning("OpenFlow error from %s: type %d code %d (request xid %d)",
                            self.names.get(m.datapath.id), m.type, m.code, m.xid)

    # ---- timing, status ----
    def settle_soon(self) -> None:
        if not self.settle_pending:
            self.settle_pending = True
            hub.spawn_after(SETTLE_S, self.send_event, self.name, EventSettle())

    @set_ev_cls(EventSettle)
    def on_settle(self, ev):
        self.settle_pending = False
        self.send(self.state.settle(time.monotonic()))
        self.write_status()

    def _ticker(self):
        while True:
            hub.sleep(self.state.tracker.interval)
            self.send_event(self.name, EventTick())

    @set_ev_cls(EventTick)
    def on_tick(self, ev):
        self.send(self.state.tick(time.monotonic()))
        self.write_status()

    @set_ev_cls([ofp_event.EventOFPPortStatsReply, ofp_event.EventOFPFlowDescStatsReply], MAIN_DISPATCHER)
    def on_counters(self, ev):
        name, now = self.names.get(ev.msg.datapath.id), time.monotonic()
        if isinstance(ev, ofp_event.EventOFPPortStatsReply):
            self.state.port_counters(name, ofmsgs.port_counters(ev.msg.body), now)
        else:   # OVS answers OpenFlow 1.5's per-flow counters as FLOW_DESC (ofmsgs.py)
            self.state.flow_counters(name, ofmsgs.flow_counters(ev.msg.body), now)

    def write_status(self, force: bool = False) -> None:
        """The status file; if it was written too lately, a settle soon writes it."""
        if not self.status.write(self.state.status, time.monotonic(), force):
            self.settle_soon()
