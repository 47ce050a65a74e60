"""The one answer to "which port does the host's hash send this flow on"
(testbed/workload/hashports.py): every host asked once, the answers given back per request, and
the choices made from them (a block of iperf3 client ports spread evenly, ports in turn, the
first source port per port)."""
from types import SimpleNamespace

from testbed.model import make_fabric
from testbed.workload import hashports

FAB = make_fabric("hpn", {})
EMU = SimpleNamespace(net=None)     # the fake kernel below answers for every host


def fake_kernel(monkeypatch, port_of):
    """Answers as the kernel would, from `port_of(src NIC ports, sport)`; counts the questions."""
    asked = []

    def flow_devs(net, by_host):
        asked.append(sorted(by_host))
        nics = {n.ip: n for n in FAB.nics()}
        return {h: [port_of(nics[s].ports, sp) for s, _, _, sp, _ in flows] for h, flows in by_host.items()}
    monkeypatch.setattr(hashports, "hosts_flow_devs", flow_devs)
    return asked


def test_every_host_is_asked_once_and_each_request_gets_its_answers(monkeypatch):
    asked = fake_kernel(monkeypatch, lambda ports, sport: ports[sport % 2])
    a, b, c = FAB.hosts["p0s0h0"].nics[0], FAB.hosts["p0s0h0"].nics[1], FAB.hosts["p0s0h1"].nics[0]
    answers = hashports.sport_ports(EMU, [(a, c, "tcp", [1, 2], 5201), (c, a, "tcp", [3], 5201),
                                           (b, c, "udp", [4, 5, 6], 7000)])
    assert asked == [["p0s0h0", "p0s0h1"]]
    assert answers == [[a.ports[1], a.ports[0]], [c.ports[1]], [b.ports[0], b.ports[1], b.ports[0]]]


def test_cport_base_is_the_first_block_the_hash_spreads_evenly(monkeypatch):
    base = hashports.CPORT_BASE
    # the first block puts every stream on port 0; the second alternates
    asked = fake_kernel(monkeypatch,
                        lambda ports, sport: ports[0] if sport < base + 16 * 4 else ports[sport % 2])
    src, dst = FAB.hosts["p0s0h0"].nics[0], FAB.hosts["p0s0h1"].nics[0]
    assert hashports.cport_base(EMU, src, dst, 4, 5201) == base + 16 * 4
    assert len(asked) == 1                               # every block tried in one question


def test_choices_from_the_answers():
    ports = ("h-n0p0", "h-n0p1")
    devs = ["h-n0p0", "h-n0p0", "h-n0p1"]
    assert hashports.by_port([7, 8, 9], devs) == {"h-n0p0": [7, 8], "h-n0p1": [9]}
    assert hashports.in_turns([7, 8, 9], devs, ports, 2) == (7, 9)
