"""A fabric across two namespace servers (`servers up 2`, `up --servers`, `servers down`).

The servers: fresh network, mount, PID and UTS namespaces each, with their own sshd (our key
only) and their own Open vSwitch; the fabric: HPN split by pod (pod 0's segment on hpn-srv1,
pod 1's and the aggregation and core on hpn-srv2), its cut links VXLAN; the controller on TLS
over the underlay. The top-tier TCP check runs from a host on one server to a host on the other,
over a cut link. After teardown neither server nor this machine's own OVS keeps anything.
"""
import json
import os
import shlex
import signal
import subprocess
import sys
import time

import pytest

from testbed.core import sh
from testbed.core.wait import sleep_until, wait_for
from testbed.emulation.cluster import servers
from testbed.emulation.net import netdevs
from testbed.emulation.run import runstate
from testbed.model import make_fabric
from testbed.model.placement import place

from .conftest import run_until_valid

pytestmark = pytest.mark.integration
NAMES = ["hpn-srv1", "hpn-srv2"]


def hpn(*args, timeout=300):
    """Run the CLI; past `timeout` it gets SIGINT (it tears its run down) and the test fails with
    what it printed, rather than a SIGKILL that would leave the run behind."""
    proc = subprocess.Popen([sys.executable, "-m", "testbed", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=90)
        finally:
            if proc.poll() is None:
                proc.kill()
        pytest.fail(f"hpn-testbed {' '.join(args)} took over {timeout} s:\n{out[-3000:]}\n{err[-3000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def on(server, script):
    return sh.run(servers.ssh_argv(server, "bash", "-c", shlex.quote(script)), timeout=30)


# The processes a server may hold besides what a run left: the daemons the testbed recorded when
# it started them (PID 1 of the server's namespaces, and the pidfiles of its Open vSwitch and its
# sshd) and this inventory's own ssh session (the ancestors of its shell, whatever OpenSSH calls
# them: sshd, or sshd-session since OpenSSH 10, and the shell's own children such as ps). Told
# apart by PID, never by a daemon's name.
OTHERS = """own=" 1 $(cat /run/openvswitch/ovsdb-server.pid /run/openvswitch/ovs-vswitchd.pid \
{sdir}/sshd.pid | tr '\\n' ' ')"
p=$$; while [ "$p" -gt 1 ]; do own="$own$p "; p=$(awk '/^PPid:/{{print $2}}' /proc/$p/status); done
ps -e -o pid=,ppid=,comm= | while read -r pid ppid comm; do
  case "$own" in *" $pid "*) continue ;; esac; [ "$ppid" = $$ ] || echo "$comm"; done"""


def server_inventory(server):
    """What a server holds besides its own daemons and this ssh session."""
    sdir = servers.lookup(server)["dir"]
    out = on(server, "ovs-vsctl list-br; echo --; ls /sys/class/net;"
                     f" echo --; {OTHERS.format(sdir=sdir)}; echo --; ls /var/run/openvswitch; echo --;"
                     " ovs-vsctl get-ssl")
    bridges, links, procs, rundir, ssl = [p.split() for p in out.split("--\n")]
    return {"bridges": bridges, "links": sorted(set(links) - {"lo", "u0"}), "procs": sorted(procs),
            "rundir": [f for f in rundir if f.startswith("hpn-testbed")], "ssl": ssl}


@pytest.fixture(scope="module")
def two_servers():
    assert os.geteuid() == 0, "needs root"
    assert servers.load() is None, "servers are already up: `hpn-testbed servers down` first"
    machine_bridges = netdevs.all_bridges()
    machine_ssl = sh.run(["ovs-vsctl", "get-ssl"])
    out = hpn("servers", "up", "2", "--json")
    assert out.returncode == 0, out.stderr
    try:
        yield json.loads(out.stdout)["result"]
    finally:
        hpn("clean")      # whatever a failed test left on the servers
        down = hpn("servers", "down")
        assert down.returncode == 0, down.stderr
        assert servers.load() is None and not servers.STATE_DIR.exists()
        assert not os.path.exists(f"/sys/class/net/{servers.MACHINE_INTF}")
        assert not os.path.exists(f"/run/netns/{servers.UNDERLAY_NS}")
        left = [p for p in map(int, filter(str.isdigit, os.listdir("/proc")))
                if servers.INIT_MARKER.encode() in _cmdline(p) or b"hpn-srv" in _cmdline(p)]
        assert not left, f"server processes left: {left}"
        # the machine's own Open vSwitch was never touched
        assert netdevs.all_bridges() - machine_bridges == set()
        assert sh.run(["ovs-vsctl", "get-ssl"]) == machine_ssl


def _cmdline(pid):
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        return b""


def test_each_server_answers_ssh_as_itself(two_servers):
    assert [s["name"] for s in two_servers["servers"]] == NAMES
    for name in NAMES:
        assert on(name, "hostname").strip() == name
        assert on(name, "ovs-vsctl --timeout=5 show")        # its own OVS answers
        inv = server_inventory(name)
        assert inv["bridges"] == [] and inv["links"] == [], inv
    # key-only: without our key and known hosts, ssh gets nowhere
    plain = subprocess.run(["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
                            "-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=5",
                            f"root@{two_servers['servers'][0]['ip']}", "true"],
                           check=False, capture_output=True, timeout=20)
    assert plain.returncode != 0
    rows = json.loads(hpn("servers", "list", "--json").stdout)["result"]["servers"]
    assert all(r["running"] and r["ssh"] and r["ovs"] for r in rows), rows


def test_hpn_across_two_servers_passes_its_checks(two_servers):
    fab = make_fabric("hpn")
    placement = place(fab, NAMES)
    out = hpn("up", "hpn", "--servers", ",".join(NAMES), "--check", "--json")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    info = json.loads(out.stdout)["result"]
    assert all(c["passed"] for c in info["checks"]), info["checks"]
    assert info["cut_links"] == len(placement.cut) == 8
    # every node ran where the plan put it (its shell's hostname says so)
    assert info["hostnames"] == placement.nodes
    # the top-tier TCP flow ran between hosts on different servers: over a cut link
    tcp = next(c for c in info["checks"] if c["name"] == "top-tier TCP")
    src, dst = (fab.nic(ip).host for ip in tcp["detail"].split(" over ")[0].split(" -> "))
    assert placement.server_of(src) != placement.server_of(dst)
    assert not (runstate.ROOT / info["run"]).exists()
    for name in NAMES:
        inv = server_inventory(name)
        assert inv == {"bridges": [], "links": [], "procs": [], "rundir": [], "ssl": []}, (name, inv)


def test_clean_removes_a_killed_cluster_run_from_its_servers(two_servers):
    proc = subprocess.Popen([sys.executable, "-m", "testbed", "up", "mpft", "--servers", ",".join(NAMES)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in proc.stdout:
            if "press Ctrl-C" in line:
                break
        # `trace` attaches to the running cluster run: hosts and switches asked on their servers
        (run_id,) = [r.run_id for r in runstate.runs() if runstate.alive(r)]
        fab = make_fabric("mpft")
        src = fab.nics()[0]
        dst = next(n for n in reversed(fab.nics()) if fab.reachable(src, n))   # NIC 0's plane
        placement = place(fab, NAMES)
        assert placement.server_of(src.host) != placement.server_of(dst.host)
        out = hpn("trace", "--fabric", run_id, src.ip, dst.ip, "--json")
        assert out.returncode == 0, out.stdout + out.stderr
        hops = json.loads(out.stdout)["result"]["hops"]
        assert {placement.server_of(h["switch"]) for h in hops} == set(NAMES), hops
        assert hops[-1]["out_port"] == fab.host_link(dst.ports[0]).b_port
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert any(server_inventory(n)["bridges"] for n in NAMES), "the killed run left bridges"
        out = hpn("clean")
        assert out.returncode == 0, out.stderr
        for name in NAMES:
            wait_for(f"{name} to be clean", lambda name=name: server_inventory(name)["bridges"] == [], 10)
            inv = server_inventory(name)
            assert inv == {"bridges": [], "links": [], "procs": [], "rundir": [], "ssl": []}, (name, inv)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
            hpn("clean")


def test_a_scenario_runs_across_two_servers(two_servers, tmp_path):
    """`run NAME --servers`: the scenario's fabrics are built on the servers (both hold bridges
    while it runs) and it reaches its verdict there; retried only on "invalid" (a busy CPU)."""
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-m", "testbed", "run", "mpft-vs-mrft", "--quick", "--json",
                                 "--servers", ",".join(NAMES), "--out", str(tmp_path)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for("both servers to hold bridges",
                     lambda: all(server_inventory(n)["bridges"] for n in NAMES), 60, interval=1.0)
            out, err = proc.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)       # it tears its run down
            out, err = proc.communicate(timeout=90)
            pytest.fail(f"run mpft-vs-mrft --servers took over 240 s:\n{err[-3000:]}")
        finally:
            if proc.poll() is None:
                proc.kill()
        assert out, err[-3000:]
        (result,) = json.loads(out)["result"]
        if result["verdict"] != "invalid":
            break
    assert result["verdict"] == "reproduced", result["measured"]
    for name in NAMES:
        assert server_inventory(name)["bridges"] == [], name


def test_a_failed_cut_link_reroutes_and_the_flow_goes_on(two_servers):
    """A TCP flow from a host on one server to one on the other, over tier 3; the cut uplink its
    trace takes fails mid-flow: the trace moves to another link, the flow keeps delivering."""
    from testbed.emulation.build import Emulation
    from testbed.emulation.cluster.site import ClusterSite
    from testbed.emulation.faults.inject import Faults
    from testbed.emulation.trace import emulation_trace
    from testbed.measure.checks import farthest_pair
    from testbed.workload import traffic

    def cut_links_on(hops):
        return [l for h in hops for l in emu.site.placement.cut
                if (h.switch, h.out_port) in ((l.a, l.a_port), (l.b, l.b_port))]

    fab = make_fabric("hpn")
    with Emulation(fab, site=ClusterSite(fab, NAMES)) as emu, Faults(emu) as faults:
        src, dst = farthest_pair(emu)
        assert emu.site.placement.server_of(src.host) != emu.site.placement.server_of(dst.host)
        hops = emulation_trace(emu, src, dst)
        (failed, *_) = cut_links_on(hops)
        delivered = [emu.fabric.host_link(p).b_intf for p in dst.ports]
        traffic.start_server(emu, dst, 5201)
        with emu.sampler(delivered, interval=0.2, queues=False) as sampler:
            client = traffic.start_client(emu, traffic.Flow(src, dst), 10)
            wait_for("the flow to deliver", lambda: sum(map(sampler.sent, delivered)) > 0, 10, 0.1)
            first = time.monotonic()
            sleep_until(first + 3)     # the fault's schedule: 3 s of flow to compare with
            faults.link_down(failed)
            t_fail = time.monotonic() - sampler.t0
            wait_for("the trace to leave the failed link",
                     lambda: failed not in cut_links_on(emulation_trace(emu, src, dst)), 10, 0.2)
            result = traffic.wait_client(emu, client, 30)
            end = time.monotonic() - sampler.t0
        rerouted = emulation_trace(emu, src, dst)
        assert rerouted[-1].out_port == emu.fabric.host_link(dst.ports[0]).b_port or \
            rerouted[-1].out_port == emu.fabric.host_link(dst.ports[-1]).b_port, rerouted
        rate_before = sampler.mean_rate(delivered, first + 1 - sampler.t0, t_fail)
        rate_after = sampler.mean_rate(delivered, t_fail + 2, end)
        assert traffic.received_mbps(result) > 0
        assert rate_after >= 0.5 * rate_before > 0, (rate_before, rate_after)


def test_hash_polarization_gives_the_same_verdict_on_one_and_two_servers(two_servers, tmp_path):
    """clos3's two pods across the servers (the core with pod 1): the same flows, the same
    verdict. Half the rate and half the bytes on both: the same transfer time, less CPU."""
    knobs = ["--set", "scale=0.025", "--set", "bytes_per_flow=75000", "--out", str(tmp_path)]
    _, (here,) = run_until_valid("hash-polarization", "--quick", *knobs)
    for _ in range(2):   # a run that lost a part says so, without a verdict (seen once in CI: a
        # second server's switch lost its controller connection); that one run is tried again
        _, (there,) = run_until_valid("hash-polarization", "--quick", *knobs, "--servers", ",".join(NAMES))
        if "lost a part" not in there["measured"]:
            break
    assert here["verdict"] == there["verdict"] == "reproduced", \
        f"one server: {here['verdict']}: {here['measured']}\ntwo: {there['verdict']}: {there['measured']}"
    for name in NAMES:
        assert server_inventory(name)["bridges"] == [], name
