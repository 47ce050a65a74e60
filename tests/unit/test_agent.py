"""The transfer agent on loopback: exact bytes per connection, pacing, the result line.

127.0.0.1 only, sockets these tests make, no root. Every socket has a timeout (the `bounded`
fixture) and every run a deadline, so a broken agent fails a test instead of hanging it.
"""
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from testbed.inhost import agent
from testbed.inhost.agent import Agent
from testbed.workload.collectives.runner import AGENT

LO = "127.0.0.1"


@pytest.fixture(autouse=True)
def bounded():
    socket.setdefaulttimeout(10)    # applies to every socket the agent makes in this process
    yield
    socket.setdefaulttimeout(None)


def run_in_process(nbytes, conns=1, message=0, policy="round-robin", rate=0, receivers=None):
    """One send of `nbytes` over `conns` connections to one listener, in this process."""
    a = Agent({"listen": [[LO, 0, conns if receivers is None else receivers, 0]], "send": [],
               "timeout": 10})
    a.listen()
    port = a.servers[0].getsockname()[1]     # port 0 in the spec: the kernel picked one
    a.spec["send"] = [[0, {"conns": [[LO, 0, LO, port]] * conns, "bytes": nbytes,
                           "message": message, "policy": policy, "rate": rate}]]
    work = threading.Thread(target=lambda: (a.send_everything(), a.wait_for_receivers()))
    t0 = time.monotonic()
    work.start()
    work.join(30)
    seconds = time.monotonic() - t0
    for srv in a.servers:
        srv.close()
    assert not work.is_alive(), "the agent did not finish"
    return a.out, seconds


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LO, 0))
        return s.getsockname()[1]


def test_one_connection_delivers_exactly_its_bytes():
    out, _ = run_in_process(1_000_003)
    assert out["err"] == []
    [(idx, t0, t1, per_conn)] = out["send"]
    assert idx == 0 and per_conn == [1_000_003] and t1 >= t0
    [(idx, n, first, last)] = out["recv"]
    assert idx == 0 and n == 1_000_003 and first <= last


def test_a_reader_counts_into_one_buffer_not_a_new_one_a_call():
    class Conn:             # what a reader needs of a connection: recv_into and close
        def __init__(self, chunks):
            self.chunks, self.buffers = list(chunks), set()

        def recv_into(self, buf):
            self.buffers.add(id(buf))
            return self.chunks.pop(0) if self.chunks else 0

        def close(self):
            pass
    a, conn = Agent({"listen": [], "send": []}), Conn([1448, 2896, 1448, 7])
    a.read(conn, 3)
    [(idx, n, first, last)] = a.out["recv"]
    assert (idx, n) == (3, 5799) and first <= last and len(conn.buffers) == 1


@pytest.mark.parametrize("policy", ["round-robin", "least-queued"])
def test_messages_spread_over_connections_arrive_per_connection(policy):
    total, message = 3_000_001, 100_000
    out, _ = run_in_process(total, conns=3, message=message, policy=policy)
    assert out["err"] == []
    [(_, _, _, per_conn)] = out["send"]
    assert len(per_conn) == 3 and sum(per_conn) == total
    # whole messages, the last one short
    assert sum(n % message for n in per_conn) == total % message
    # every connection's receiver read exactly what was put on that connection
    assert sorted(n for _, n, _, _ in out["recv"]) == sorted(per_conn)
    if policy == "round-robin":
        assert sorted(per_conn) == [1_000_000, 1_000_000, 1_000_001]


def test_pacing_holds_a_connection_to_its_rate():
    _, unpaced = run_in_process(1_000_000)
    out, paced = run_in_process(1_000_000, rate=4e6)     # 4 MB/s: 0.25 s, less the first window
    assert out["err"] == [] and out["recv"][0][1] == 1_000_000
    assert paced >= 0.1 > unpaced


def test_a_refused_connection_is_reported_not_raised():
    a = Agent({"listen": [], "send": [[7, {"conns": [[LO, 0, LO, free_port()]], "bytes": 10}]]})
    a.send_everything()
    assert a.out["send"] == [] and a.out["err"][0].startswith("send 7 ")


def test_the_agent_process_speaks_ready_go_and_one_json_line(tmp_path):
    port = free_port()
    spec = {"listen": [[LO, port, 2, 5]], "timeout": 10,
            "send": [[5, {"conns": [[LO, 0, LO, port]] * 2, "bytes": 500_000, "message": 64_000,
                          "policy": "least-queued", "rate": 0}]]}
    # the runner's own command (-I -S), with the working directory elsewhere and a PYTHONPATH
    # -I ignores: the package is found where the runner's came from, and `clean` finds the marker
    assert agent.MARKER in " ".join(AGENT)
    proc = subprocess.Popen([*AGENT, json.dumps(spec)], cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(tmp_path)}, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n", proc.stderr.read()
        text, err = proc.communicate("go\n", timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, err
    out = json.loads(text.strip().splitlines()[-1])
    assert set(out) == {"recv", "send", "err"} and out["err"] == []
    [(idx, t0, t1, per_conn)] = out["send"]
    assert idx == 5 and t0 <= t1 and sum(per_conn) == 500_000
    assert sorted(n for _, n, _, _ in out["recv"]) == sorted(per_conn)
    assert {i for i, _, _, _ in out["recv"]} == {5}


def test_the_agent_imports_only_the_standard_library(tmp_path):
    # what `python -I -m testbed.inhost.agent` loads beyond a bare interpreter
    script = ("import sys; base = set(sys.modules); import runpy; "
              f"runpy.run_module({agent.MARKER!r}); "
              "print(sorted(m for m in set(sys.modules) - base "
              "if m.split('.')[0] not in sys.stdlib_module_names))")
    out = subprocess.run([sys.executable, "-I", "-c", script], cwd=tmp_path, text=True,
                         capture_output=True, timeout=30, check=True).stdout
    assert out.strip() == str(["testbed", "testbed.inhost"])


def test_the_marker_is_the_module_name():
    assert agent.MARKER == agent.__name__
