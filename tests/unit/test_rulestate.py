"""The controller's rule state (controller/rulestate.py), one transition at a time, without os-ken
or a switch: each event is a call, and what it returns is what the switches would be sent.

The fabric is examples/tree.toml: a0, a1 on leaf0 (ports 1, 2), b0, b1 on leaf1 (ports 1, 2),
both leaves up to root on their port 3 (root's 1 and 2)."""
import subprocess
import sys
from pathlib import Path

from controller.rulestate import Install, PollFlows, PollPorts, Remove, Reset, RuleState
from testbed.model import make_fabric, policies
from testbed.model.contract import CoreKey, FlowKey, RouteKey
from testbed.model.fabric import GATEWAY_IP

ROOT = Path(__file__).resolve().parents[2]
TREE = {"topology": str(ROOT / "examples" / "tree.toml")}
A0, A1, B0, B1 = "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"
SWITCHES = ("root", "leaf0", "leaf1")
NICS = {A0: ("leaf0", 1), A1: ("leaf0", 2), B0: ("leaf1", 1), B1: ("leaf1", 2)}


def mac(ip):
    return "02:00:0a:00:00:0" + ip[-1]


def state(routing=None, fabric=None, **kw):
    fab = fabric or make_fabric("file", TREE)
    return RuleState(fab, routing or policies.normalize(fab, {}), **kw)


def announce(s, ip, at=None):
    switch, port = at or NICS[ip]
    s.arp(switch, port, ip, mac(ip), ip)


def up_and_learned(s=None, nics=NICS):
    """Every switch connected, every NIC in `nics` announced, settled."""
    s = s or state()
    for sw in SWITCHES:
        s.switch_up(sw)
    for ip in nics:
        announce(s, ip)
    s.settle(0.0)
    return s


def keys(msgs, kind=Install):
    return {m.key for m in msgs if isinstance(m, kind)}


def test_the_rule_state_runs_without_os_ken():
    code = ("import sys, controller.rulestate; "
            "sys.exit(sorted(m for m in sys.modules if m.split('.')[0] == 'os_ken') or 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_switch_that_connects_is_wiped_and_told_its_table_0():
    s = state(beside=True)
    assert s.switch_up("leaf0") == [Reset("leaf0", (), True)]
    assert s.connected == {"leaf0"} and s.settled and s.installed == {}


def test_a_gratuitous_arp_learns_the_nic_and_only_its_rules_go_stale():
    s = state()
    for sw in SWITCHES:
        s.switch_up(sw)
    s.arp("leaf0", 1, A0, mac(A0), B0)                 # a request, not an announcement
    s.arp("leaf0", 1, GATEWAY_IP, mac(A0), GATEWAY_IP)  # the gateway is not a NIC
    assert s.learned == {} and s.settled
    announce(s, A0)
    assert s.stale == {A0} and not s.settled and s.learned[A0].at == {("leaf0", 1)}
    msgs = s.settle(0.0)
    assert keys(msgs) == {RouteKey(sw, A0) for sw in SWITCHES} and s.settled
    route = next(m.value for m in msgs if m.key == RouteKey("leaf0", A0))
    assert route.ports == (1,) and route.deliver_mac == mac(A0)
    announce(s, A0)                                    # heard again: nothing new
    assert s.settled and s.settle(0.0) == []


def test_a_settle_sends_only_what_changed():
    s = up_and_learned(nics=[A0])
    announce(s, B0)
    assert keys(s.settle(0.0)) == {RouteKey(sw, B0) for sw in SWITCHES}   # A0's stay as they are


def test_a_switch_connecting_late_gets_every_rule_it_should_hold():
    s = state()
    s.switch_up("leaf0")
    for ip in NICS:
        announce(s, ip)
    s.settle(0.0)
    assert {k.switch for k in s.installed} == {"leaf0"}          # root and leaf1 not connected
    msgs = s.switch_up("root")
    assert msgs[0] == Reset("root", (), False)
    assert keys(msgs) == {RouteKey("root", ip) for ip in NICS}


def test_a_reconnect_loses_the_old_connection_and_resends_everything():
    s = up_and_learned()
    s.switch_down("leaf1")
    assert s.lost == ["leaf1"] and "leaf1" not in s.connected
    assert not any(k.switch == "leaf1" for k in s.installed)
    assert s.settle(0.0) == []                                   # nothing is sent to it meanwhile
    msgs = s.switch_up("leaf1")
    assert msgs[0] == Reset("leaf1", (), False) and keys(msgs) == {RouteKey("leaf1", ip) for ip in NICS}
    assert s.status().lost == ("leaf1",) and s.status().connected == tuple(sorted(SWITCHES))


def test_port_down_then_up_recomputes_every_nic():
    s = up_and_learned()
    s.port_state("leaf0", 1, True)                     # a0's port
    assert s.down == {("leaf0", 1)} and s.stale_all
    msgs = s.settle(0.0)
    assert keys(msgs, Remove) == {RouteKey(sw, A0) for sw in SWITCHES} and keys(msgs) == set()
    assert s.status().down == (("leaf0", 1),)
    s.port_state("leaf0", 1, False)
    assert keys(s.settle(0.0)) == {RouteKey(sw, A0) for sw in SWITCHES} and s.down == set()


def test_only_changes_of_the_fabrics_own_ports_count():
    s = up_and_learned()
    s.port_state("leaf0", 99, True)                    # not a fabric port (the bridge's, a user's)
    s.port_state(None, 1, True)                        # a switch not known yet
    assert s.settled and s.down == set()
    s.port_state("leaf0", 3, True)
    s.stale_all = False
    s.port_state("leaf0", 3, True)                     # no change: nothing stale
    assert s.settled


def test_a_switch_with_every_port_down_is_isolated_and_its_rules_wait():
    s = up_and_learned()
    held = {k: v for k, v in s.installed.items() if k.switch == "leaf0"}
    for port in (1, 2, 3):
        s.port_state("leaf0", port, True)
    msgs = s.settle(0.0)
    assert s.isolated == {"leaf0"} and s.status().isolated == ("leaf0",)
    assert not any(m.switch == "leaf0" for m in msgs)            # nothing sent to it...
    assert {k: v for k, v in s.installed.items() if k.switch == "leaf0"} == held   # ...it keeps them
    assert keys(msgs, Remove) == {RouteKey(sw, ip) for sw in ("root", "leaf1") for ip in (A0, A1)}
    s.port_state("leaf1", 2, True)                     # b1 goes while leaf0 is away
    s.settle(0.0)
    for port in (1, 2, 3):
        s.port_state("leaf0", port, False)
    msgs = s.settle(0.0)
    assert s.isolated == set()
    # back: what went unwanted meanwhile goes, the rest it still holds
    assert [m for m in msgs if m.switch == "leaf0"] == [Remove(RouteKey("leaf0", B1))]


def test_per_port_core_rules_are_keyed_by_their_in_port():
    fab = make_fabric("hpn")
    s = state(fabric=fab)
    for sw in fab.switches:
        s.switch_up(sw)
    for nic in fab.nics():                             # every NIC announces itself on every port
        for switch, port in fab.attachments(nic):
            s.arp(switch, port, nic.ip, nic.mac, nic.ip)
    s.settle(0.0)
    core = [k for k in s.installed if isinstance(k, CoreKey)]
    assert core and all(fab.switches[k.switch].role == "core" for k in core)
    assert s.status().core_rules == len(core) and s.status().routes == len(s.installed) - len(core)


class Recording(policies.RoutingPolicy):
    """A whole-fabric policy that records which NICs each computation saw."""
    name, summary, whole_fabric = "recording", "a test's", True

    def __init__(self):
        self.seen = []

    def routes(self, fabric, routes, core, opts):
        self.seen.append(sorted({r.ip for r in routes}))
        return list(routes)


def test_a_whole_fabric_policy_recomputes_every_nic():
    policy = Recording()
    s = up_and_learned(state(policies.Routing("seeded", "ecmp", policy, {})), nics=[A0, B0])
    announce(s, B1)
    s.settle(0.0)
    assert policy.seen[-1] == [A0, B0, B1]


class Pinning(policies.Tracker):
    """A tracker that pins each sampled flow where it was seen, out of port `port`."""
    interval = 0.5

    def __init__(self):
        self.flows, self.counted = {}, []

    def on_sample(self, switch, in_port, key, tcp_flags, now):
        self.flows[key] = switch
        return True

    def on_flow_counters(self, switch, counters, fwd, now):
        self.counted.append((switch, list(counters)))

    def plan(self, fwd, now, log):
        self.flows.clear()         # the plan: nothing pinned any more
        return True

    def wanted(self, fwd):
        return {FlowKey(sw, key): 3 for key, sw in self.flows.items()}

    def status(self, flow_rules):
        return {"flow_rules": flow_rules}


class Tracking(policies.RoutingPolicy):
    name, summary = "tracking", "a test's"

    def samples(self, opts):
        return (policies.Sample({"eth_type": 0x0800, "ip_proto": 6}, 64),)

    def tracker(self, fabric, opts):
        return Pinning()


def test_a_policys_tracker_changes_the_per_flow_rules():
    s = up_and_learned(state(policies.Routing("seeded", "ecmp", Tracking(), {})))
    assert s.switch_up("leaf1")[0].samples == (policies.Sample({"eth_type": 0x0800, "ip_proto": 6}, 64),)
    flow = policies.FiveTuple(A0, B0, 6, 40000, 5201)
    msgs = s.tcp_sample("leaf0", 1, flow, 0x02, 1.0)
    assert msgs == [Install(FlowKey("leaf0", flow), 3)]
    assert s.status().tracker == {"flow_rules": 1} and s.status().routes_per_switch["leaf0"] == 4
    msgs = s.tick(2.0)                                 # polls, then the plan unpins the flow
    assert msgs == [PollPorts("leaf0"), PollPorts("leaf1"), PollPorts("root"), PollFlows("leaf0"),
                    Remove(FlowKey("leaf0", flow))]
    s.flow_counters("leaf0", [(flow, 10)], 2.1)
    assert s.tracker.counted == [("leaf0", [(flow, 10)])]


def test_without_a_tracker_there_is_nothing_to_poll():
    s = up_and_learned()
    assert s.tick(1.0) == [] and s.status().tracker is None
    s.port_counters("leaf0", [(1, 100)], 1.0)          # (a stray reply changes nothing)


def test_the_status_says_what_the_state_holds():
    s = up_and_learned()
    st = s.status()
    assert sorted(st.connected) == sorted(SWITCHES) and st.lost == () and st.settled
    assert st.learned == {ip: (at,) for ip, at in NICS.items()}
    assert st.routes == 12 and st.core_rules == 0 and st.routes_per_switch == {sw: 4 for sw in SWITCHES}
    assert st.policy["policy"] == "ecmp"
    announce(s, A0, ("leaf0", 2))                      # a second port: stale until settled
    assert not s.status().settled
