"""`hpn-testbed ps` and `capture` on a fabric that another process runs (`up`): ps lists it with
its id; capture writes a pcap that scapy reads, holding the frames a ping sent; Ctrl-C ends a
capture cleanly (exit 0, a readable file) and no tcpdump is left. The capture file follows the
rules of every output (issue 39): a new file unless --force, never through a link; the filter
is an expression only, never options for tcpdump (a second `-w` past every check)."""
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
    """The tcpdumps writing `path` (through `-w -`: their stdout is that file)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            out = os.readlink(f"/proc/{pid}/fd/1")
        except OSError:
            continue
        if b"tcpdump" in cmd and out == str(path):
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


def capture(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([*TESTBED, "capture", "p0e0h0-n0p0", "-c", "1", *args], capture_output=True,
                          text=True, timeout=60, check=False, cwd=cwd)


def test_the_capture_file_is_new_never_a_link_and_the_filter_never_an_option(clos3_up, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (tmp_path / "link.pcap").symlink_to(victim)
    for args, why in [(["--filter=-w" + str(tmp_path / "evil.pcap")], "a filter expression"),
                      (["--filter", " -w /etc/passwd", "-w", str(tmp_path / "new.pcap")],
                       "a filter expression"),
                      (["-w", ""], "is empty"), (["-w", str(victim)], "exists (give --force"),
                      (["-w", "/etc/passwd"], "exists (give --force"),
                      (["-w", str(tmp_path / "link.pcap"), "--force"], "symbolic link")]:
        res = capture(*args)
        assert res.returncode == 2 and res.stdout == "" and res.stderr.count("\n") == 1, (args, res)
        assert why in res.stderr, (args, res.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.pcap", "victim"]
    assert victim.read_text() == "keep me" and not tcpdumps_writing(victim)
    pcap = tmp_path / "again.pcap"
    pcap.write_text("an earlier capture")
    cap = subprocess.Popen([*TESTBED, "capture", "p0e0h0-n0p0", "-c", "2", "-w", str(pcap), "--force",
                            "--filter", "icmp"], stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    ping(clos3_up, "p0e0h0", "10.0.3.2", 2)
    _, err = cap.communicate(timeout=30)
    assert cap.returncode == 0, err
    from scapy.all import rdpcap
    assert len(rdpcap(str(pcap))) == 2 and not pcap.is_symlink()


def test_a_filter_tcpdump_refuses_leaves_no_file(clos3_up, tmp_path):
    res = capture("-w", str(tmp_path / "x.pcap"), "--filter", "no such ( filter")
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert not (tmp_path / "x.pcap").exists()


def test_another_user_is_told_root_is_needed_while_a_fabric_runs(clos3_up, as_nobody, tmp_path):
    """Issue 39: as nobody, `ps` and `capture` said "no fabric is running" while one was up. Now
    `ps` says root is needed (or, for a user who may read the run state, shows the fabric) and
    `capture` says it needs root."""
    tmp_path.chmod(0o755)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "200"}
    for argv in (["ps"], ["capture", "p0e0h0-n0p0", "-c", "1"]):
        res = subprocess.run([*as_nobody, *TESTBED, *argv], capture_output=True, text=True, timeout=60,
                             check=False, cwd=tmp_path, env=env)
        assert "no fabric" not in res.stdout + res.stderr and "Traceback" not in res.stderr, (argv, res)
        if res.returncode == 0:
            assert argv == ["ps"] and clos3_up.run_id in res.stdout, res
        else:
            assert res.returncode == 2 and "root" in res.stderr, (argv, res)
