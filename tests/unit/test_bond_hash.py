"""The Linux bond layer3+4 hash (testbed/emulation/net/hostnet.py) and how route answers use it."""
from testbed.emulation.hosts import route_get_devs
from testbed.emulation.net.hostnet import layer34_slave


def reference(src_ip, dst_ip, sport, dport, count):
    """drivers/net/bonding/bond_main.c on a little-endian machine, spelled out differently:
    the ports word and the addresses as the kernel's u32 loads see them."""
    def le(octets):
        return octets[0] | octets[1] << 8 | octets[2] << 16 | octets[3] << 24
    ports = le([sport >> 8, sport & 0xFF, dport >> 8, dport & 0xFF])
    h = ports ^ le([int(x) for x in src_ip.split(".")]) ^ le([int(x) for x in dst_ip.split(".")])
    h ^= h >> 16
    h ^= h >> 8
    return (h >> 1) % count


def test_layer34_matches_the_kernel_formula_and_spreads():
    slaves = ["a", "b"]
    picks = [layer34_slave("10.0.0.1", "10.0.0.2", sp, 5201, slaves) for sp in range(41000, 41064)]
    assert picks == [slaves[reference("10.0.0.1", "10.0.0.2", sp, 5201, 2)] for sp in range(41000, 41064)]
    assert 20 <= picks.count("a") <= 44
    assert layer34_slave("10.0.0.1", "10.0.0.2", 41000, 5201, ["only"]) == "only"


def test_route_answers_naming_a_bond_give_the_slave_that_is_up():
    flows = [("10.0.0.1", "10.0.1.2", "tcp", sp, 5201) for sp in (41000, 41001)]
    routes = '[{"dst":"10.0.1.2","dev":"h0-n0"}]\n' * 2
    both = routes + "bond h0-n0 h0-n0p0=up h0-n0p1=up\n"
    assert route_get_devs(both, flows) == [layer34_slave(*f[:2], *f[3:], ["h0-n0p0", "h0-n0p1"])
                                           for f in flows]
    one_down = routes + "bond h0-n0 h0-n0p0=down h0-n0p1=up\n"
    assert route_get_devs(one_down, flows) == ["h0-n0p1", "h0-n0p1"]
    none_up = routes + "bond h0-n0 h0-n0p0=down h0-n0p1=down\n"
    assert route_get_devs(none_up, flows) == ["h0-n0", "h0-n0"]
    plain = '[{"dst":"10.0.1.2","dev":"h0-n0p0"}]\n'
    assert route_get_devs(plain, flows[:1]) == ["h0-n0p0"]
