"""The UDP blaster on loopback: every flow sends at its rate from one loop, in the caller's
namespace (PID 0), and a full socket buffer drops at the sender instead of blocking."""
import json
import subprocess
import sys

import pytest


def blast(lines, seconds=1.0, size=1000):
    proc = subprocess.run([sys.executable, "-I", "-m", "testbed.inhost.blaster", str(seconds), str(size)],
                          input="\n".join(lines + ["go"]) + "\n", capture_output=True, text=True, timeout=30,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    ready, result = proc.stdout.splitlines()
    assert ready == "ready"
    return json.loads(result)


def test_each_flow_sends_at_its_rate():
    out = blast(["listen 0 127.0.0.1 47001", "flow 0 127.0.0.1 47101 127.0.0.1 47001 20000",
                 "flow 0 127.0.0.1 47102 127.0.0.1 47001 50000"], seconds=1.0)
    # 20 and 50 datagrams of 1,000 bytes in one second (a datagram or two either way)
    assert out["sent"][0] == pytest.approx(20, abs=2) and out["sent"][1] == pytest.approx(50, abs=2)
    assert out["dropped"] == [0, 0]


def test_many_flows_cost_one_process():
    flows = [f"flow 0 127.0.0.1 {48000 + k} 127.0.0.1 47002 2000" for k in range(500)]
    out = blast(["listen 0 127.0.0.1 47002"] + flows, seconds=1.0)
    assert len(out["sent"]) == 500 and sum(out["sent"]) == pytest.approx(1000, rel=0.1)


def test_a_counting_listener_counts_what_each_flow_delivered():
    out = blast(["listen 0 127.0.0.1 47003 count", "listen 0 127.0.0.1 47004",
                 "flow 0 127.0.0.1 47201 127.0.0.1 47003 20000",
                 "flow 0 127.0.0.1 47202 127.0.0.1 47003 40000",
                 "flow 0 127.0.0.1 47203 127.0.0.1 47004 20000"], seconds=1.0)
    # loopback loses nothing: each flow into the counting listener delivered what it sent;
    # the flow into the other listener is not counted
    assert out["received"][:2] == out["sent"][:2] and out["received"][2] == 0
    assert out["sent"][1] == pytest.approx(40, abs=2)


def test_without_a_counting_listener_nothing_is_read():
    out = blast(["listen 0 127.0.0.1 47005", "flow 0 127.0.0.1 47301 127.0.0.1 47005 20000"])
    assert "received" not in out
