"""Pure parts of the fault tooling: the detector's frames and route rewrites, the meters' series.

The frames the testbed builds by hand (standard library only, so that the programs in hosts
start fast) are read and built here with scapy, an independent implementation of ARP.
"""
from scapy.layers.l2 import ARP, Ether

from testbed.emulation.net import garp, hostnet
from testbed.inhost import detector
from testbed.measure import meters
from testbed.model import make_fabric


def test_probe_is_an_arp_request_for_the_gateway_and_its_answer_is_recognised():
    frame = Ether(detector.probe_frame("10.1.0.1", "02:00:0a:01:00:01"))
    assert frame.dst == "ff:ff:ff:ff:ff:ff" and frame.src == "02:00:0a:01:00:01"
    assert frame[ARP].op == 1 and frame[ARP].pdst == detector.GATEWAY_IP        # who-has gateway
    assert frame[ARP].psrc == "10.1.0.1" and frame[ARP].hwsrc == "02:00:0a:01:00:01"
    gw_mac, me = "02:fe:00:00:00:01", "02:00:0a:01:00:01"
    reply = bytes(Ether(src=gw_mac, dst=me) / ARP(op=2, hwsrc=gw_mac, psrc=detector.GATEWAY_IP,
                                                   hwdst=me, pdst="10.1.0.1"))
    frame = bytes(frame)
    assert detector.is_gateway_reply(reply, "10.1.0.1")
    assert not detector.is_gateway_reply(reply, "10.1.0.2")              # someone else's answer
    assert not detector.is_gateway_reply(frame, "10.1.0.1")              # our own request


def test_gratuitous_arp_announces_the_nic():
    frame = Ether(garp.garp_frame("10.2.1.4", "02:00:0a:02:01:04"))
    assert frame.dst == "ff:ff:ff:ff:ff:ff" and frame.src == "02:00:0a:02:01:04"
    assert frame[ARP].op == 1 and frame[ARP].psrc == frame[ARP].pdst == "10.2.1.4"
    assert frame[ARP].hwsrc == "02:00:0a:02:01:04"


def test_route_rewrite_keeps_only_live_ports():
    nic = {"ip": "10.0.0.1", "mac": "m", "table": 100, "main": True, "bond": None, "ports": ["a", "b"]}
    one = detector.route_commands(nic, ["b"])
    assert one[0] == ["ip", "route", "replace", "default", "table", "100", "src", "10.0.0.1",
                      "via", detector.GATEWAY_IP, "dev", "b", "onlink"]
    assert one[1][:4] == ["ip", "route", "replace", "default"] and "table" not in one[1]
    both = detector.route_commands(dict(nic, main=False), ["a", "b"])
    assert len(both) == 1 and both[0].count("nexthop") == 2
    assert detector.route_commands(dict(nic, bond="h-n0"), ["a"]) == []


def test_detector_specs_cover_dual_ported_nics_only():
    dual = make_fabric("hpn", {})
    host = dual.hosts["p0s0h0"]
    specs = hostnet.detector_specs(host, "multipath")
    assert [s["table"] for s in specs] == [100, 101] and specs[0]["main"] and not specs[1]["main"]
    assert specs[0]["ports"] == list(host.nics[0].ports) and specs[0]["bond"] is None
    assert hostnet.detector_specs(host, "bonding")[1]["bond"] == "p0s0h0-n1"
    single = make_fabric("hpn", {"single_tor": True})
    assert hostnet.detector_specs(single.hosts["p0s0h0"], "multipath") == []


def test_rates_stalls_and_iperf_intervals():
    samples = [(0.0, 0, 0), (0.5, 1_000_000, 0), (1.0, 1_000_000, 0), (1.5, 1_000_000, 0),
               (2.0, 2_000_000, 0)]
    r = meters.rates(samples)
    assert r == [(0.5, 16.0), (1.0, 0.0), (1.5, 0.0), (2.0, 16.0)]
    assert meters.longest_stall(r, 1.0) == 1.0
    assert meters.summed_rates([r, r])[0] == (0.5, 32.0)
    result = {"intervals": [
        {"sum": {"end": 0.5, "bits_per_second": 8e6},
         "streams": [{"socket": 5, "end": 0.5, "bits_per_second": 5e6},
                     {"socket": 7, "end": 0.5, "bits_per_second": 3e6}]}]}
    series = meters.iperf_intervals(result, offset=2.0)
    assert series["sum"] == [(2.5, 8.0)] and series["streams"][7] == [(2.5, 3.0)]
