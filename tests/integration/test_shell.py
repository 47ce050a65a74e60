"""`up --cli` driven the way a person drives it: through a pseudo-terminal, typing commands and
reading what comes back. Every way of leaving it (exit, Ctrl-D, SIGTERM, closing the terminal)
must leave nothing behind, and so must closing the terminal of a scenario run."""
from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from pathlib import Path

import pexpect
import pytest

from testbed.core.wait import wait_for
from testbed.emulation.run import runstate
from testbed.model import make_fabric

from .conftest import run_of, state_leftovers

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
PROMPT = "mininet> "
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")      # readline's bracketed-paste switches, colours
UP_TIMEOUT = 240


def spawn(*args: str) -> pexpect.spawn:
    """`hpn-testbed ARGS` in a pseudo-terminal of its own (it is the session leader, as in a
    terminal window, so closing the terminal sends it SIGHUP)."""
    return pexpect.spawn(sys.executable, ["-m", "testbed", *args], cwd=str(ROOT), env=dict(os.environ),
                         encoding="utf-8", codec_errors="replace", timeout=60, dimensions=(50, 200))


def close_terminal(child: pexpect.spawn, timeout: float = 120) -> None:
    """Close the terminal (its master side) and wait for the process to end. Not child.close():
    that follows up with SIGINT and, with force, SIGKILL, which would cut a teardown short."""
    child.ptyproc.fileobj.close()
    wait_for("the process to end after its terminal closed", lambda: not child.isalive(), timeout, 0.1)
    print(f"after the terminal closed: exit status {child.exitstatus}, signal {child.signalstatus}")
    assert child.signalstatus is None    # it ended itself, through its teardown, not by the signal


class Session:
    """`hpn-testbed up FAMILY --cli` at its prompt."""

    def __init__(self, family: str):
        self.fabric = make_fabric(family, {})
        self.child = spawn("up", family, "--cli")
        self.child.expect(PROMPT, timeout=UP_TIMEOUT)
        self.state = run_of(self.child.pid)
        assert self.state is not None

    def type(self, command: str, timeout: float = 60) -> str:
        """Type `command` and Enter; what it printed before the next prompt (its echo left out)."""
        self.child.sendline(command)
        self.child.expect_exact(PROMPT, timeout=timeout)
        return self.printed(self.child.before)

    @staticmethod
    def printed(text: str) -> str:
        return ANSI.sub("", text).replace("\r", "").partition("\n")[2]

    def leave(self, timeout: float = 120) -> str:
        """Wait for the process to end; what it printed meanwhile."""
        self.child.expect(pexpect.EOF, timeout=timeout)
        self.child.wait()
        return ANSI.sub("", self.child.before)

    def leftovers(self) -> list[str]:
        return state_leftovers(self.state, self.fabric)


@pytest.fixture
def session():
    """session(family) -> a Session; after the test it has ended and left nothing."""
    started: list[Session] = []

    def start(family: str) -> Session:
        started.append(Session(family))
        return started[-1]
    yield start
    for s in started:
        if s.child.isalive():   # a failed test: leave through SIGTERM, which tears down
            s.child.kill(signal.SIGTERM)
            s.child.expect(pexpect.EOF, timeout=120)
            s.child.wait()
        assert not s.leftovers(), f"left behind: {s.leftovers()}"


def last_rates(printed: str, port: str) -> tuple[float, float]:
    """(in, out) Mbit/s of a switch port in the last refresh `rates` printed."""
    found = re.findall(rf"{re.escape(port)}\s+\S+\s+in\s+([\d.]+)\s+out\s+([\d.]+)", printed)
    assert found, printed
    return float(found[-1][0]), float(found[-1][1])


def test_mininet_and_testbed_commands_work_on_multi_nic_hosts(session):
    s = session("hpn")
    fab = s.fabric
    # Mininet's listings print again, each node once
    nodes = s.type("nodes")
    assert all(name in nodes.split() for name in [*fab.hosts, *fab.switches]), nodes
    assert nodes.split().count("c0") == 1, nodes
    assert "p0s0h0 p0s0h0-n0p0:p0s0r0t0-eth1" in s.type("net")
    assert "<FabricHost p0s0h0:" in s.type("dump")
    assert "p0s0h0-n0p0<->p0s0r0t0-eth1 (OK OK)" in s.type("links")
    assert "p0s0h0: p0s0h0-n0p0,p0s0h0-n0p1" in s.type("intfs")
    assert s.type("py net.hosts[0].IP()").strip() == "None"      # a multi-NIC host has no one IP
    addresses = s.type("p0s0h0 ip -br addr")
    assert all(n.ip in addresses for n in fab.hosts["p0s0h0"].nics), addresses
    assert all(p in addresses for n in fab.hosts["p0s0h0"].nics for p in n.ports), addresses
    listed = s.type("help")
    assert all(re.search(rf"^  {c} ", listed, re.MULTILINE) for c in
               ("trace", "fault", "rates", "queues", "routes", "check", "pingall", "iperf")), listed
    kinds = s.type("help fault")          # the fault registry's kinds, each with its usage
    assert all(f"fault {k} " in kinds for k in ("link-down", "flap", "one-way", "switch-down")), kinds

    # pingall: each NIC to the same-rail NIC of every other host
    pairs = len(fab.nics()) * (len(fab.hosts) - 1)
    pinged = s.type("pingall")
    assert f"*** Results: 0% dropped ({pairs}/{pairs} received)" in pinged, pinged
    rate = re.search(r"Results: ([\d.]+) Mbits/sec received", s.type("iperf -t 2 p0s0h0 p1s0h1"))
    assert rate and float(rate.group(1)) > 0
    named = s.type("iperf -t 1 p0s0h0-n1 p1s0h1-n1")
    assert "p0s0h0-n1 (10.1.0.1)" in named and "Mbits/sec received" in named, named
    traced = s.type("trace p0s0h0 p1s0h1")
    hops = re.findall(r"^\s+\d+\s+(\S+)\s+in \d+ from \S+\s+out \d+ to (\S+)", traced, re.MULTILINE)
    assert len(hops) >= 3 and hops[-1][1].startswith("p1s0h1-n0p"), traced
    routes = s.type("routes p0s0r0t0")
    assert re.search(r"nw_dst=10\.0\.0\.1\s+-> port 1 \(p0s0h0-n0p0\)", routes), routes
    one_way_fault_stops_one_direction(s)
    assert "p0s0h0 -> p0s0r0t0 dropped" in s.type("fault list")

    s.child.sendline("exit")
    out = s.leave()
    assert s.child.exitstatus == 0, out
    assert not s.leftovers()
    assert not traffic_processes(), "background iperf3 of the host shells outlived the run"


def one_way_fault_stops_one_direction(s: Session) -> None:
    """UDP both ways between p0s0h0-n0 and p0s0h1-n0 (16 flows each, spread over both ports of
    each NIC), then host -> ToR dropped on p0s0h0-n0p0: its ToR port still sends, receives nothing."""
    port = s.fabric.host_link("p0s0h0-n0p0").b_intf
    s.type("p0s0h1 timeout 60 iperf3 -s -1 -p 5401 >/dev/null 2>&1 &")
    s.type("p0s0h0 timeout 60 iperf3 -s -1 -p 5402 >/dev/null 2>&1 &")
    wait_for("the iperf3 servers", lambda: ":5401" in s.type("p0s0h1 ss -Hltn") and
             ":5402" in s.type("p0s0h0 ss -Hltn"), 10, 0.2)
    for src, dst, dport in (("p0s0h0", "p0s0h1", 5401), ("p0s0h1", "p0s0h0", 5402)):
        s.type(f"{src} timeout 60 iperf3 -c {dst} -B {src} -p {dport} -u -b 250K -P 16 -t 40 "
               ">/dev/null 2>&1 &")
    got, sent = last_rates(s.type("rates p0s0r0t0 -n 2"), port)
    assert got > 0.3 and sent > 0.3, (got, sent)
    assert "carrier up" in s.type("fault one-way p0s0h0-n0p0 up")
    got, sent = last_rates(s.type("rates p0s0r0t0 -n 2"), port)
    assert got < 0.05 and sent > 0.3, (got, sent)
    assert re.search(rf"{port}\s+\S+\s+queue\s+\d+\s+max\s+\d+", s.type("queues p0s0r0t0 -n 1"))


def traffic_processes() -> list[str]:
    """Processes of this test's background traffic (the only iperf3 on ports 5401 and 5402)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"iperf3" in words and (b"5401" in words or b"5402" in words):
            found.append(pid)
    return found


MALFORMED = [
    "foo", "pingal", "nosuch argument", "!!!", "???x", "-x", "1234", "trace", "trace p0e0h0",
    "trace nohost p1e1h1", "trace p0e0h0 p1e1h1 --sport x", "trace p0e0h0 p1e1h1 --dport 70000",
    "trace p0e0h0 p1e1h1 --proto icmp", "trace p0e0h0 p1e1h1 extra", "trace 'unclosed", "fault nosuch",
    "fault link-down", "fault link-down nosuch-eth9", "fault one-way p0e0h0-n0p0 up extra",
    "fault one-way p0e0h0-n0p0 sideways", "fault flap p0e0h0-n0p0 --count 0",
    "fault flap p0e0h0-n0p0 --period 0.1 --down 0.5", "fault switch-down nosuch", "fault switch-up",
    "rates nosuch", "rates -n -1", "rates -i 0", "queues --bogus", "routes", "routes nosuch",
    "check now", "iperf p0e0h0", "iperf p0e0h0 p0e0h0", "iperf nosuch p1e1h1", "iperf -t -3 p0e0h0 p1e1h1",
    "iperfudp", "iperfudp xyzM p0e0h0 p1e1h1", "pingall extra", "pingpair x", "link", "link p0e0h0 up",
    "link p0e0h0 p1e1h1 down", "switch nosuch stop", "switch p0e0 explode", "dpctl no-such-command",
    "py 1/0", "py (", "py exit()", "source /nonexistent/file", "p0e0h0",
]


def test_malformed_commands_get_one_line_and_ctrl_c_returns_to_the_prompt(session):
    assert len(MALFORMED) == 50
    s = session("clos3")
    for command in MALFORMED:
        lines = s.type(command).splitlines()
        assert len(lines) == 1 and "Traceback" not in lines[0], (command, lines)
    # Ctrl-C stops a command on a node and one of the testbed's, not the session
    for command, started in (("p0e0h0 sleep 30", None), ("rates -n 0", "--- 1 s")):
        s.child.sendline(command)
        if started:
            s.child.expect_exact(started)
        else:
            time.sleep(1)
        t0 = time.monotonic()
        s.child.sendintr()
        s.child.expect_exact(PROMPT, timeout=10)
        assert time.monotonic() - t0 < 5 and "Traceback" not in s.child.before
    assert "p0e0h0" in s.type("nodes")
    assert "dropped" in s.type("fault one-way p0e0h0-n0p0 down")   # a rule in the root namespace
    s.child.sendeof()                                               # Ctrl-D
    out = s.leave()
    assert s.child.exitstatus == 0, out
    assert not s.leftovers()


@pytest.mark.parametrize("how", ["SIGTERM", "terminal closed"])
def test_a_signal_under_a_running_command_tears_everything_down(session, how):
    s = session("clos3")
    assert "dropped" in s.type("fault one-way p0e0h0-n0p0 down")
    s.child.sendline("rates -n 0")
    s.child.expect_exact("--- 1 s")
    if how == "SIGTERM":
        s.child.kill(signal.SIGTERM)
        out = s.leave()
        assert s.child.exitstatus == 128 + signal.SIGTERM, out
        assert "interrupted; cleaned up" in out and "Traceback" not in out, out
    else:
        close_terminal(s.child)
    assert not s.leftovers()


def test_closing_the_terminal_of_a_scenario_run_tears_it_down(tmp_path):
    child = spawn("run", "link-flap", "--quick", "--out", str(tmp_path))
    try:
        state = wait_for("the scenario's run", lambda: run_of(child.pid), 120)
        wait_for("its traffic", lambda: any(m == "iperf3" for _, m in
                                            runstate.RunState.load(state.dir).live_processes()), 60)
        spec = json.loads(state.file("spec.json").read_text())
        state = runstate.RunState.load(state.dir)     # with every process recorded so far
        close_terminal(child)
    finally:
        if child.isalive():
            child.kill(signal.SIGTERM)
            child.expect(pexpect.EOF, timeout=120)
    assert not state_leftovers(state, make_fabric(spec["family"], spec["params"]))
