"""Reliability under a careless or hostile local user: concurrent runs, recycled PIDs, a dead
controller, a foreign OpenFlow client, signals during teardown."""
from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time

import pytest

from testbed.core.wait import wait_for
from testbed.emulation.control.controller import MARKER as CONTROLLER_MARKER
from testbed.emulation.net import netdevs
from testbed.emulation.run import processes, runstate
from testbed.model import make_fabric
from testbed.workload import traffic

from .conftest import TESTBED, finish, run_of, start_up, state_leftovers

pytestmark = pytest.mark.integration


def test_two_runs_at_once_one_is_refused_before_it_creates_anything():
    procs = [subprocess.Popen([*TESTBED, "up", "hpn", "--check"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], outs
    refused = outs[[p.returncode for p in procs].index(2)]
    assert refused[1].count("\n") == 1 and "another fabric is up" in refused[1], refused
    assert "Traceback" not in refused[1]
    assert not runstate.runs()     # both gone: the refused one never made any


def test_a_second_fabric_is_refused_while_one_runs_and_the_first_is_untouched():
    fab = make_fabric("clos3", {})
    first = start_up("clos3")
    try:
        state = run_of(first.pid)
        second = subprocess.run([*TESTBED, "up", "clos3", "--check"], capture_output=True, text=True,
                                timeout=60)
        assert second.returncode == 2 and "another fabric is up" in second.stderr
        assert state.run_id in second.stderr                 # it names the run that is up
        assert [s.run_id for s in runstate.runs()] == [state.run_id]
        assert not state_leftovers_other(state, fab)          # the first run still has all its parts
    finally:
        first.send_signal(signal.SIGINT)
        out = finish(first)
    assert first.returncode == 130, out
    assert not state_leftovers(state, fab)


def state_leftovers_other(state, fab) -> list[str]:
    """What the running `state` is missing: every bridge and interface it recorded."""
    names = set(os.listdir("/sys/class/net"))
    missing = [i for i in state.data["root_intfs"] if i not in names]
    missing += [b for b in fab.switches if b not in netdevs.all_bridges()]
    return missing


@pytest.fixture
def foreign_process():
    """A process this test starts whose command line holds the words `clean` looks for."""
    proc = subprocess.Popen(["bash", "-c", "exec -a 'iperf3 mininet: controller.launcher' sleep 60"])
    wait_for("the foreign process", lambda: b"iperf3" in open(f"/proc/{proc.pid}/cmdline", "rb").read(), 5)
    yield proc
    proc.kill()
    proc.wait()


def fake_run(run_id: str, owner: list, pids: list) -> runstate.RunState:
    state = runstate.RunState(run_id)
    state.data.update(owner=owner, pids=pids)
    state.create()
    return state


def test_clean_spares_a_process_that_took_over_a_recorded_pid(foreign_process):
    pid = foreign_process.pid
    started = processes.start_time(pid)
    # a dead run (its owner gone) that recorded this PID, but for a process started earlier
    fake_run("hpntest-reused", [999_999_999, 1], [[pid, "iperf3", started - 1],
                                                  [pid, "controller.launcher", started - 7]])
    out = subprocess.run([*TESTBED, "clean"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert foreign_process.poll() is None, "clean ended a process that only reused a PID"
    assert not (runstate.ROOT / "hpntest-reused").exists()


def test_a_run_whose_owner_pid_was_reused_counts_as_dead(foreign_process):
    pid = foreign_process.pid
    state = fake_run("hpntest-owner", [pid, processes.start_time(pid) - 1], [])
    assert not runstate.alive(state)      # the PID runs, but it is another process
    subprocess.run([*TESTBED, "clean"], capture_output=True, text=True, timeout=60, check=True)
    assert not state.dir.exists()
    assert foreign_process.poll() is None


def controller_pid(state) -> int:
    return next(pid for pid, marker in state.live_processes() if marker == CONTROLLER_MARKER)


def test_a_killed_controller_ends_up_with_an_error_and_nothing_left():
    fab = make_fabric("hpn", {})
    proc = start_up("hpn")
    state = run_of(proc.pid)
    killed = time.monotonic()
    os.kill(controller_pid(state), signal.SIGKILL)
    out = finish(proc, 60)
    noticed = time.monotonic() - killed
    assert proc.returncode == 1, out
    assert "the controller exited" in out, out
    print(f"controller death -> `up` exited after teardown in {noticed:.2f} s")
    assert not state_leftovers(state, fab)


def openflow(msg_type: int, body: bytes = b"", xid: int = 1) -> bytes:
    return struct.pack("!BBHI", 0x06, msg_type, 8 + len(body), xid) + body   # OpenFlow 1.5


def recv_message(sock) -> tuple[int, bytes]:
    head = b""
    while len(head) < 8:
        chunk = sock.recv(8 - len(head))
        if not chunk:
            raise ConnectionError("closed")
        head += chunk
    _, msg_type, length, _ = struct.unpack("!BBHI", head)
    body = b""
    while len(body) < length - 8:
        body += sock.recv(length - 8 - len(body))
    return msg_type, body


def claim_dpid(path: str, dpid: int) -> bool:
    """Pose as the switch `dpid`: HELLO, then FEATURES_REPLY to the FEATURES_REQUEST. True if
    the controller then programs us (a FLOW_MOD: it took us for the switch), False if it hung up."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(path)
        try:
            s.sendall(openflow(0))                                   # HELLO
            while recv_message(s)[0] != 5:                           # FEATURES_REQUEST
                pass
            s.sendall(openflow(6, struct.pack("!QIBB2xII", dpid, 0, 254, 0, 0, 0), 2))
            while recv_message(s)[0] != 14:                          # FLOW_MOD
                pass
            return True
        except (TimeoutError, ConnectionError, OSError):
            return False


def test_a_foreign_openflow_client_cannot_reach_or_replace_a_switch(up, as_nobody):
    emu = up("clos3")
    path = str(emu.controller.socket)
    # an unprivileged local user cannot even connect
    nobody = subprocess.run([*as_nobody, sys.executable, "-c",
                             f"import socket; socket.socket(socket.AF_UNIX).connect({path!r})"],
                            capture_output=True, text=True, timeout=30)
    assert nobody.returncode != 0 and "PermissionError" in nobody.stderr, nobody.stderr
    # even root posing as a connected switch is refused (only ovs-vswitchd may connect); the
    # real switch keeps its connection
    victim = next(iter(emu.fabric.switches.values()))
    assert not claim_dpid(path, victim.dpid)
    assert "refusing an OpenFlow connection" in emu.controller_log()
    status = emu.status()
    assert victim.name in status.connected and not status.lost
    a, b = emu.fabric.nics()[0], emu.fabric.nics()[-1]
    assert all(traffic.ping_all(emu, [(a, b), (b, a)]).values())
    emu.check_whole()


@pytest.mark.parametrize("how", ["second SIGINT in teardown", "SIGINT inherited ignored", "SIGHUP"])
def test_signals_tear_down(how):
    fab = make_fabric("hpn", {})
    popen = {}
    if how == "SIGINT inherited ignored":   # as a background job of a script starts it
        popen["preexec_fn"] = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)
    proc = start_up("hpn", **popen)
    state = run_of(proc.pid)
    sig = signal.SIGHUP if how == "SIGHUP" else signal.SIGINT
    proc.send_signal(sig)
    if how == "second SIGINT in teardown":
        first = state.data["root_intfs"][0]   # the links go first, in one batch
        wait_for("teardown to begin", lambda: not os.path.exists(f"/sys/class/net/{first}"), 30, 0.01)
        proc.send_signal(signal.SIGINT)
    out = finish(proc)
    assert proc.returncode == 128 + sig, out
    assert "interrupted; cleaned up" in out, out
    assert not state_leftovers(state, fab)


def test_a_scenario_whose_controller_dies_reports_invalid(tmp_path):
    import json
    fab = make_fabric("hpn", {})
    proc = subprocess.Popen([*TESTBED, "run", "link-flap", "--quick", "--json", "--out", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        state = wait_for("the scenario's run", lambda: run_of(proc.pid), 60)
        wait_for("its traffic", lambda: any(m == "iperf3" for _, m in
                                            runstate.RunState.load(state.dir).live_processes()), 60)
        os.kill(controller_pid(runstate.RunState.load(state.dir)), signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    [result] = json.loads(out)["result"]
    assert result["verdict"] == "invalid" and "controller exited" in result["measured"], result
    assert proc.returncode == 1
    assert not state_leftovers(runstate.RunState.load(state.dir) if state.dir.exists() else state, fab)
