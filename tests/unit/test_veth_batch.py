"""The fabric's veth pairs as one kernel batch (testbed/emulation/net/links.py): every cable once,
a host's end made in its namespace with its NIC's MAC, every end at the fabric's MTU, the
switches' ends set up. No root."""
from testbed.emulation.net import hostnet
from testbed.emulation.net.links import veth_lines
from testbed.model import make_fabric


def test_every_cable_is_one_pair_with_host_ends_in_their_namespaces():
    fab = make_fabric("hpn")
    pids = {h: 1000 + i for i, h in enumerate(fab.hosts)}
    lines = veth_lines(fab, fab.links, pids, 4096)
    adds = [line for line in lines if line.startswith("link add ")]
    assert len(adds) == len(fab.links)
    assert all(" mtu 4096 type veth peer name " in a and a.endswith(" mtu 4096") for a in adds)
    link = fab.host_links()[0]
    nic = next(n for n in fab.hosts[link.a].nics if link.a_intf in n.ports)
    assert (f"link add name {link.a_intf} address {nic.mac} netns {pids[link.a]} mtu 4096 "
            f"type veth peer name {link.b_intf} mtu 4096") in adds
    ups = {line.split()[-2] for line in lines if line.startswith("link set dev ")}
    root_ends = {l.b_intf for l in fab.links} | {l.a_intf for l in fab.switch_links()}
    assert ups == root_ends          # host ends go up in their host script, after their MAC


def test_a_bond_carries_the_fabric_mtu_so_enslaving_keeps_its_ports_at_it():
    host = make_fabric("hpn").hosts["p0s0h0"]
    assert " mtu 9000 type bond " in hostnet.host_script(host, "bonding", "system", mtu=9000)
    assert " mtu 1500 type bond " in hostnet.host_script(host, "bonding", "system")


def test_the_mtu_is_1500_unless_hpn_mtu_says_otherwise_and_out_of_range_is_refused(monkeypatch):
    import pytest

    from testbed.core.errors import ParamError
    from testbed.emulation.net import system
    monkeypatch.delenv("HPN_MTU", raising=False)
    assert system.mtu() == 1500
    monkeypatch.setenv("HPN_MTU", "9000")
    assert system.mtu() == 9000
    for bad in ("jumbo", "-1"):
        monkeypatch.setenv("HPN_MTU", bad)
        with pytest.raises(ParamError, match="HPN_MTU"):
            system.mtu()
    for value in (575, 9001):
        with pytest.raises(ParamError, match="576..9000"):
            system.check_mtu(value)


def test_a_hosts_script_configures_it_in_one_ip_batch_and_shapes_its_ports_in_one_tc_batch():
    host = make_fabric("hpn").hosts["p0s0h0"]
    script = hostnet.host_script(host, "bonding", "system", tc_lines=["qdisc replace dev X root"])
    assert script.count("ip -batch - <<'EOF'") == 1 and script.count("tc -batch - <<'EOF'") == 1
    assert script.index("ip -batch") < script.index("tc -batch")     # shaped once its bonds exist
    assert "sysctl" not in script and "\nip link" not in script      # the shell's writes, no process each
    assert "tc -batch" not in hostnet.host_script(host, "bonding", "system")


def test_every_route_of_a_host_starts_tcp_with_1500s_bytes_at_a_larger_mtu():
    # Linux's 10 segments are 14.5 KB at 1500; at 4096 4 segments (16 KB), at 9000 2 (17.9 KB)
    assert (hostnet.initial_window(1500), hostnet.initial_window(4096),
            hostnet.initial_window(9000)) == (None, 4, 2)
    host = make_fabric("hpn").hosts["p0s0h0"]
    for backend in ("bonding", "multipath"):
        routes = [line for line in hostnet.host_script(host, backend, "netdev", mtu=4096).splitlines()
                  if line.startswith("route add default")]
        assert len(routes) == len(host.nics) + 1 and all(" initcwnd 4 " in r for r in routes)
        at_1500 = hostnet.host_script(host, backend, "netdev")
        assert "initcwnd" not in at_1500          # the kernel's own window, as before
