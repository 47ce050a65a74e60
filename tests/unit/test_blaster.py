"""The UDP blaster on loopback: every flow sends at its rate from one loop, in the caller's
namespace (PID 0), and a full socket buffer drops at the sender instead of blocking.

Each run takes its own address in 127/8 (all of it is loopback), so two suites running at once
(two worktrees, CI beside a developer) never bind each other's ports."""
import json
import random
import subprocess
import sys

import pytest

LO = "127.{}.{}.{}".format(*(random.randrange(1, 255) for _ in range(3)))


def blast(lines, seconds=1.0, size=1000):
    proc = subprocess.run([sys.executable, "-I", "-m", "testbed.inhost.blaster", str(seconds), str(size)],
                          input="\n".join(lines + ["go"]) + "\n", capture_output=True, text=True, timeout=30,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    ready, result = proc.stdout.splitlines()
    assert ready == "ready"
    return json.loads(result)


def test_each_flow_sends_at_its_rate():
    out = blast([f"listen 0 {LO} 47001", f"flow 0 {LO} 47101 {LO} 47001 20000",
                 f"flow 0 {LO} 47102 {LO} 47001 50000"], seconds=1.0)
    # 20 and 50 datagrams of 1,000 bytes in one second (a datagram or two either way)
    assert out["sent"][0] == pytest.approx(20, abs=2) and out["sent"][1] == pytest.approx(50, abs=2)
    assert out["dropped"] == [0, 0]


def test_many_flows_cost_one_process():
    flows = [f"flow 0 {LO} {48000 + k} {LO} 47002 2000" for k in range(500)]
    out = blast([f"listen 0 {LO} 47002"] + flows, seconds=1.0)
    assert len(out["sent"]) == 500 and sum(out["sent"]) == pytest.approx(1000, rel=0.1)


def test_a_counting_listener_counts_what_each_flow_delivered():
    out = blast([f"listen 0 {LO} 47003 count", f"listen 0 {LO} 47004",
                 f"flow 0 {LO} 47201 {LO} 47003 20000",
                 f"flow 0 {LO} 47202 {LO} 47003 40000",
                 f"flow 0 {LO} 47203 {LO} 47004 20000"], seconds=1.0)
    # loopback loses nothing: each flow into the counting listener delivered what it sent;
    # the flow into the other listener is not counted
    assert out["received"][:2] == out["sent"][:2] and out["received"][2] == 0
    assert out["sent"][1] == pytest.approx(40, abs=2)


def test_without_a_counting_listener_nothing_is_read():
    out = blast([f"listen 0 {LO} 47005", f"flow 0 {LO} 47301 {LO} 47005 20000"])
    assert "received" not in out
