"""`hpn-testbed ps` and `capture` on a fabric that another process runs (`up`): ps lists it with
its id; capture writes a pcap that scapy reads, holding the frames a ping sent; Ctrl-C ends a
capture cleanly (exit 0, a readable file) and no tcpdump is left."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import TESTBED, run_of, start_up


@pytest.fixture(scope="module")
def clos3_up():
    proc = start_up("clos3")
    try:
        yield run_of(proc.pid)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)


def tcpdumps_writing(path: Path) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"tcpdump" in cmd and str(path).encode() in cmd:
            found.append(int(pid))
    return found


def test_ps_lists_the_running_fabric(clos3_up):
    out = subprocess.run([*TESTBED, "ps", "--json"], capture_output=True, text=True, timeout=60,
                         check=False)
    assert out.returncode == 0, out.stderr
    [row] = [r for r in json.loads(out.stdout)["result"]["runs"] if r["run"] == clos3_up.run_id]
    assert row["live"] is True and row["family"] == "clos3" and row["hosts"] == 8
    assert row["datapath"] in ("system", "netdev") and row["age_s"] >= 0
    table = subprocess.run([*TESTBED, "ps"], capture_output=True, text=True, timeout=60, check=False)
    assert clos3_up.run_id in table.stdout and "running" in table.stdout


def ping(state, host: str, ip: str, count: int) -> None:
    pid = state.data["hosts"][host]
    subprocess.run(["nsenter", "-t", str(pid), "-n", "ping", "-c", str(count), "-i", "0.2", ip],
                   check=True, capture_output=True, timeout=30)


def test_capture_holds_the_frames_a_ping_sent(clos3_up, tmp_path):
    from scapy.all import ICMP, IP, rdpcap
    pcap = tmp_path / "ping.pcap"
    cap = subprocess.Popen([*TESTBED, "capture", "p0e0h0-n0p0", "-w", str(pcap), "-c", "6",
                            "--filter", "icmp"], stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)        # tcpdump is listening
    ping(clos3_up, "p0e0h0", "10.0.3.2", 3)      # p1e1h1's NIC
    _, err = cap.communicate(timeout=30)
    assert cap.returncode == 0, err
    frames = rdpcap(str(pcap))
    icmp = [f for f in frames if ICMP in f]
    assert len(icmp) == 6, frames
    assert {(f[IP].src, f[ICMP].type) for f in icmp} == {("10.0.0.1", 8), ("10.0.3.2", 0)}
    assert not tcpdumps_writing(pcap)


def test_ctrl_c_ends_a_capture_and_leaves_no_tcpdump(clos3_up, tmp_path):
    from scapy.all import rdpcap
    pcap = tmp_path / "switch.pcap"
    cap = subprocess.Popen([*TESTBED, "capture", "p0e0h0-n0p0,p0e0-eth1", "-w", str(pcap)],
                           stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    assert tcpdumps_writing(pcap)
    ping(clos3_up, "p0e0h0", "10.0.3.2", 2)
    cap.send_signal(signal.SIGINT)
    _, err = cap.communicate(timeout=30)
    assert cap.returncode == 0, err
    assert len(rdpcap(str(pcap))) >= 4
    assert not tcpdumps_writing(pcap)
