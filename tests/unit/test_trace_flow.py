"""trace: the flow handed to ofproto/trace names its ports per protocol (udp_src for UDP: OVS
3.1 refuses tp_src there), and the host's own choice of port is asked for the same protocol."""
import pytest

from testbed.emulation import trace as T
from testbed.emulation.hosts import RouteQueries
from testbed.model import make_fabric
from testbed.model.fabric import GATEWAY_MAC


@pytest.fixture
def hpn():
    return make_fabric("hpn")


def test_udp_flow_uses_udp_ports(hpn):
    src, dst = hpn.nic("p0s0h0-n0"), hpn.nic("p1s0h1-n0")
    flow = T.trace_flow(3, src, dst, "udp", 40000, 5201)
    assert flow == (f"in_port=3,udp,dl_src={src.mac},dl_dst={GATEWAY_MAC},nw_src={src.ip},"
                    f"nw_dst={dst.ip},nw_ttl=64,udp_src=40000,udp_dst=5201")
    assert "tp_src" not in flow and "tcp" not in flow


def test_tcp_flow_uses_tcp_ports(hpn):
    src, dst = hpn.nic("p0s0h0-n0"), hpn.nic("p1s0h1-n0")
    flow = T.trace_flow(1, src, dst, "tcp", 0, 65535)
    assert flow.startswith("in_port=1,tcp,") and flow.endswith(",tcp_src=0,tcp_dst=65535")


def test_other_protocols_are_refused(hpn):
    src, dst = hpn.nic("p0s0h0-n0"), hpn.nic("p1s0h1-n0")
    with pytest.raises(ValueError):
        T.trace_flow(1, src, dst, "icmp", 1, 1)


class FakeHost(RouteQueries):
    """Answers `ip -j route get` with the NIC's second port, recording the script."""

    def __init__(self, dev):
        self.dev, self.scripts = dev, []

    def run_script(self, script):
        self.scripts.append(script)
        return f'[{{"dev": "{self.dev}"}}]\n'


def test_udp_trace_asks_switches_and_host_for_udp(hpn, monkeypatch):
    src, dst = hpn.nic("p0s0h0-n0"), hpn.nic("p1s0h1-n0")
    host = FakeHost(src.ports[1])
    asked = []

    def ovs(cmd, **kw):
        asked.append(cmd)
        return "Datapath actions: drop\n"        # the first switch drops: one hop
    monkeypatch.setattr(T.sh, "run", ovs)
    hops = T.trace(hpn, {src.host: host}, src, dst, "udp", 40001, 4791)
    (script,) = host.scripts
    assert f"route get {dst.ip} from {src.ip} ipproto udp sport 40001 dport 4791\n" in script
    first = hpn.host_link(src.ports[1])
    assert [(h.switch, h.in_port, h.out_port) for h in hops] == [(first.b, first.b_port, None)]
    [cmd] = asked
    assert cmd[:3] == ["ovs-appctl", "ofproto/trace", first.b]
    assert cmd[3] == T.trace_flow(first.b_port, src, dst, "udp", 40001, 4791)


def test_trace_says_when_routes_are_still_changing():
    """Issue 40 item 12: right after a fault `trace` showed the path through the dead link with
    no word; it now says why the path may change (a hop out of a down port, or an unsettled
    controller), and nothing once the controller has settled."""
    from testbed.cli.trace import changing
    from testbed.model.contract import ControllerStatus
    from testbed.model.paths import Hop
    hops = [Hop("tor0", 1, 5), Hop("agg0", 2, 3)]
    assert "agg0 port 3, which is down" in changing(ControllerStatus(down=(("agg0", 3),), settled=True), hops)
    assert "not settled" in changing(ControllerStatus(settled=False), hops)
    assert changing(ControllerStatus(settled=True), hops) is None
    assert changing(None, hops) is None
