"""The routing-policy registry: every registered policy answers every question the testbed and
the controller ask of one, and a malformed one is refused with one line."""
import json
from pathlib import Path

import pytest
from os_ken.ofproto import ofproto_v1_5, ofproto_v1_5_parser

from controller.switch import SwitchWriter
from testbed.core.errors import ParamError
from testbed.model import FAMILIES, make_fabric
from testbed.model import policies as P
from testbed.model.contract import RouteKey
from testbed.model.policies.base import NicPairs, Number

BUILT_IN = [p.name for p in P.POLICIES]


class FakeDatapath:
    """Enough of an os-ken Datapath for SwitchWriter: every message is serialized (so a rule
    os-ken cannot encode fails here) and kept."""
    ofproto, ofproto_parser, id = ofproto_v1_5, ofproto_v1_5_parser, 1

    def __init__(self):
        self.sent = []

    def set_xid(self, msg):
        msg.set_xid(len(self.sent) + 1)

    def send_msg(self, msg):
        self.set_xid(msg)
        msg.serialize()
        self.sent.append(msg)


def option_values(fab, option):
    """(values the option accepts, values it refuses)."""
    if isinstance(option, Number):
        return [option.lo, option.hi, option.default], [option.lo - 1, option.hi + 1, "x", None]
    nics = fab.nics()
    return [[[nics[0].name, nics[-1].name]], []], [[[nics[0].name, nics[0].name]], "x",
                                                   [["nosuch", nics[0].name]]]


@pytest.mark.parametrize("name", BUILT_IN)
@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_policy_parses_its_options(name, family):
    fab = make_fabric(family)
    policy = P.get(name)
    if policy.refuses(fab):
        with pytest.raises(ParamError, match=f"routing policy='{name}': "):
            P.normalize(fab, {"policy": name})
        return
    routing = P.normalize(fab, {"policy": name})
    assert routing.policy is policy and set(routing.options) == {o.name for o in policy.options}
    json.dumps(routing.to_json())
    for option in policy.options:
        good, bad = option_values(fab, option)
        for value in good:
            P.normalize(fab, {"policy": name, option.name: value})
        for value in bad:
            with pytest.raises(ParamError, match=f"routing {option.name}"):
                P.normalize(fab, {"policy": name, option.name: value})


def test_every_policy_is_a_choice_and_only_those():
    assert P.names()[:len(BUILT_IN)] == tuple(BUILT_IN) == ("ecmp", "static", "adaptive")
    schema = json.loads((Path(__file__).resolve().parents[2] / "docs" / "experiment.schema.json").read_text())
    assert schema["properties"]["routing"]["properties"]["policy"]["enum"] == BUILT_IN   # the published one
    with pytest.raises(ParamError, match="routing policy='spray': choose from ecmp, static, adaptive"):
        P.normalize(make_fabric("hpn"), {"policy": "spray"})


def routed(fab, name, **opts):
    """The routing options, the /32 routes, the core rules and the policy's routes."""
    routing = P.normalize(fab, {"policy": name, **opts})
    routes = P.all_routes(fab)
    core = routing.core_rules(fab, routes)
    return routing, routes, core, routing.routes(fab, routes, core)


@pytest.mark.parametrize("name", BUILT_IN)
@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_policy_routes_every_family(name, family):
    """A policy chooses among each route's next hops, for every route, and every NIC still
    reaches every other."""
    fab = make_fabric(family)
    if P.get(name).refuses(fab):
        return
    _, routes, core, out = routed(fab, name)
    before = {(r.switch, r.ip): r for r in routes}
    after = {(r.switch, r.ip): r for r in out}
    assert after.keys() == before.keys()
    for key, r in after.items():
        assert r.ports and set(r.ports) <= set(before[key].ports) and r.deliver_mac == before[key].deliver_mac
    fwd = P.Forwarding(fab, out, core)
    nics = fab.nics()
    for src in nics:
        for dst in nics:
            if src != dst and (fwd.ingress(src)[0], dst.ip) in fwd.routes:
                switch, port = fwd.ingress(src)
                assert fwd.walk(switch, port, dst.ip, lambda sw, p, options: options[0]), (src.name, dst.name)


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_policy_hooks_give_rules_the_switches_take(name):
    """Samples and the rules of routes, core rules and a tracker's flow rules encode as OpenFlow."""
    fab = make_fabric("clos3")
    routing, _, core, out = routed(fab, name)
    policy = routing.policy
    assert isinstance(policy.whole_fabric, bool)
    samples = policy.samples(routing.options)
    assert all(isinstance(s, P.Sample) and 0 < s.bytes <= 0xFFFF for s in samples)
    sw = next(iter(fab.switches.values()))
    writer = SwitchWriter(FakeDatapath(), sw, routing.ecmp)
    writer.reset(samples)
    assert len(writer.dp.sent) == 2 + 4 + len(samples)   # wipe flows, groups; 4 fixed table-0 rules
    for r in out:
        if r.switch == sw.name:
            writer.install(RouteKey(r.switch, r.ip), r)
    tracker = policy.tracker(fab, routing.options)
    if tracker is not None:
        assert isinstance(tracker, P.Tracker) and tracker.interval > 0
        fwd = P.Forwarding(fab, out, core)
        assert tracker.wanted(fwd) == {}
        json.dumps(tracker.status(0))


class Named(P.RoutingPolicy):
    name, summary = "throwaway", "a test's"


def malformed():
    class NoSummary(P.RoutingPolicy):
        name = "no-summary"

    class BadBounds(Named):
        options = (Number("knob", 5, 0, 1, "outside"),)

    class Reserved(Named):
        options = (NicPairs("core", "taken by every run"),)

    class NotAHook(Named):
        routes = 3

    class Taken(Named):
        name = "ecmp"
    return [(object(), "not a RoutingPolicy"), (NoSummary(), "no summary"),
            (type("Bad", (Named,), {"name": "Bad Name"})(), "lowercase"),
            (BadBounds(), "default outside its bounds"), (Reserved(), "a name taken"),
            (NotAHook(), "routes is not a method"), (Taken(), "the name is taken")]


@pytest.mark.parametrize("policy, why", malformed(),
                         ids=lambda x: type(x).__name__ if not isinstance(x, str) else "")
def test_a_malformed_policy_is_refused_in_one_line(policy, why):
    with pytest.raises(ParamError, match=why) as e:
        P.register(policy)
    assert "\n" not in str(e.value)
    assert P.names()[:3] == ("ecmp", "static", "adaptive") and P.get("ecmp") is P.POLICIES[0]


def test_a_policy_may_refuse_a_fabric():
    class TwoTier(Named):
        def refuses(self, fabric):
            core = any(s.role == "core" for s in fabric.switches.values())
            return "only two-tier fabrics" if core else None
    P.register(TwoTier())
    try:
        assert P.normalize(make_fabric("mpft"), {"policy": "throwaway"}).policy.name == "throwaway"
        with pytest.raises(ParamError, match="routing policy='throwaway': only two-tier fabrics"):
            P.normalize(make_fabric("clos3"), {"policy": "throwaway"})
    finally:
        P.unregister("throwaway")


def test_a_file_registers_its_policy(tmp_path):
    good = tmp_path / "mine.py"
    good.write_text("from testbed.model import policies\n\n"
                    "class Mine(policies.RoutingPolicy):\n    name, summary = 'mine', 'a user policy'\n\n"
                    "policies.register(Mine())\n")
    try:
        assert P.load_file(good) == ["mine"]
        assert P.source("mine") == str(good.resolve()) and P.source("ecmp") is None
        assert P.normalize(make_fabric("mpft"), {"policy": "mine"}).policy.name == "mine"
    finally:
        P.unregister("mine")
    for k, (text, why) in enumerate((("raise RuntimeError('boom')\n", "RuntimeError: boom"),
                                     ("x = 1\n", "registers no routing policy"),
                                     ("def (:\n", "bad2.py:1: invalid syntax"))):
        bad = tmp_path / f"bad{k}.py"
        bad.write_text(text)
        with pytest.raises(ParamError, match=why) as e:
            P.load_file(bad)
        assert "\n" not in str(e.value)
    with pytest.raises(ParamError, match="no such plug-in file"):
        P.load_file(tmp_path / "nosuch.py")
