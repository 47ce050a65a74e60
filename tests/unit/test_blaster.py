"""The UDP blaster on loopback: every flow sends at its rate from one loop, in the caller's
namespace (PID 0), and a full socket buffer drops at the sender instead of blocking."""
import json
import subprocess
import sys

import pytest


def blast(lines, seconds=1.0, size=1000):
    proc = subprocess.run([sys.executable, "-I", "-m", "testbed.inhost.blaster", str(seconds), str(size)],
                          input="\n".join(lines + ["go"]) + "\n", capture_output=True, text=True, timeout=30)
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
