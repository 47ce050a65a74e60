"""Where `capture` listens (testbed/emulation/capture.py), read from the model: a host port in
its host's namespace, a switch port in the root namespace, a cable at its lower end; anything
else refused with one line."""
import pytest

from testbed.core.errors import ParamError
from testbed.emulation import capture
from testbed.model import make_fabric


@pytest.fixture(scope="module")
def hpn():
    return make_fabric("hpn", {})


def test_a_host_port_is_captured_in_its_host(hpn):
    where = capture.locate(hpn, "p0s0h0-n0p0")
    assert where == capture.Where("p0s0h0-n0p0", "p0s0h0")
    argv = capture.tcpdump_argv(where, 4242, "/tmp/x.pcap", 5, "icmp")
    i = argv.index("nsenter")
    assert argv[i:i + 4] == ["nsenter", "-t", "4242", "-n"] and argv[-1] == "icmp"
    assert ["-w", "/tmp/x.pcap"] == argv[argv.index("-w"):argv.index("-w") + 2] and "5" in argv


def test_a_switch_port_and_a_cable(hpn):
    link = hpn.host_links()[0]
    assert capture.locate(hpn, link.b_intf) == capture.Where(link.b_intf, None)
    assert capture.locate(hpn, f"{link.b_intf},{link.a_intf}") == capture.Where(link.a_intf, link.a)
    up = hpn.switch_links()[0]
    assert capture.locate(hpn, f"{up.a_intf}, {up.b_intf}") == capture.Where(up.a_intf, None)
    assert "nsenter" not in capture.tcpdump_argv(capture.Where(up.a_intf, None), None, None, None, None)


@pytest.mark.parametrize("port", ["nosuch", "p0s0h0-n0p0,p0s0r1t1-eth9", ",", "p0s0h0"])
def test_unknown_ports_are_refused(hpn, port):
    with pytest.raises(ParamError):
        capture.locate(hpn, port)


def test_the_filter_reaches_tcpdump_as_an_expression_only(hpn):
    """`--filter=-w/x.pcap` once reached tcpdump as options (a second -w, as root): the filter
    comes after `--`, and one that starts with `-` is refused."""
    where = capture.locate(hpn, "p0s0h0-n0p0")
    argv = capture.tcpdump_argv(where, 4242, "-", 1, "icmp or arp")
    assert argv[-2:] == ["--", "icmp or arp"] and argv.index("--") > argv.index("-c")
    for bad in ("-w/tmp/x.pcap", " -w /etc/passwd", "--version", "-Z nobody"):
        with pytest.raises(ParamError, match="a filter expression"):
            capture.tcpdump_argv(where, 4242, None, 1, bad)
