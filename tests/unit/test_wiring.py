"""Miswiring on purpose and naming what is miswired (claim C9), without a switch."""
import pytest

from testbed.core.errors import ParamError
from testbed.model import make_fabric, wiring


@pytest.fixture(scope="module")
def hpn():
    return make_fabric("hpn")


def uplinks(fab):
    return [l for l in fab.switch_links() if fab.switches[l.a].role == "tor"]


def test_the_blueprint_as_built_is_the_blueprint(hpn):
    assert wiring.as_built(hpn, []) == hpn.links
    seen = {end: peer for end, peer in wiring.blueprint_peer(hpn).items()}
    assert wiring.wrong_cables(hpn, seen) == []


def test_a_swap_of_two_uplink_ports_trades_their_far_ends(hpn):
    x, y = uplinks(hpn)[0], uplinks(hpn)[3]
    a, b = (x.a, x.a_port), (y.a, y.a_port)
    [swap] = wiring.parse_swaps(hpn, [f"{x.a_intf},{y.a_intf}"])
    built = wiring.as_built(hpn, [swap])
    assert len(built) == len(hpn.links)
    pairs = {((l.a, l.a_port), (l.b, l.b_port)) for l in built}
    assert (a, (y.b, y.b_port)) in pairs and (b, (x.b, x.b_port)) in pairs
    assert {l.a_intf for l in built} == {l.a_intf for l in hpn.links}   # names stay the ports'


def test_the_check_names_exactly_the_two_swapped_cables(hpn):
    x, y = uplinks(hpn)[0], uplinks(hpn)[3]
    swaps = wiring.parse_swaps(hpn, [f"{x.a_intf},{y.a_intf}"])
    seen = {}
    for u, v in wiring.miswire(hpn, swaps):         # a probe into each end comes out at the other
        seen[u], seen[v] = v, u
    wrong = wiring.wrong_cables(hpn, seen)
    assert sorted(sorted(w["cable"]) for w in wrong) == sorted(
        [sorted([x.a_intf, y.b_intf]), sorted([y.a_intf, x.b_intf])])


def test_host_ports_of_two_tors_can_be_swapped(hpn):
    h0, h1 = hpn.host_links()[0], hpn.host_links()[2]
    swaps = wiring.parse_swaps(hpn, [f"{h0.b_intf},{h1.b_intf}"])
    built = {l.a_intf: (l.b, l.b_port) for l in wiring.as_built(hpn, swaps) if l.a in hpn.hosts}
    assert built[h0.a_intf] == (h1.b, h1.b_port) and built[h1.a_intf] == (h0.b, h0.b_port)


@pytest.mark.parametrize("bad",
                         ["p0s0r0t0-eth1", "nosuch-eth1,p0s0r0t0-eth1", "p0s0r0t0-eth999,p0s0r0t0-eth1",
                                 "p0s0r0t0-eth1,p0s0r0t0-eth1", "p0s0r0t0-eth3,p0a0n0-eth1"])
def test_bad_swaps_are_refused(hpn, bad):
    with pytest.raises(ParamError):
        wiring.parse_swaps(hpn, [bad])
