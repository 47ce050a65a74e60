"""Impairments on a live fabric, set as a user sets them from another terminal (`hpn-testbed link
impair`), measured by what a ping flow crossing the port sees: the loss within 10% of what was
set; then, picked by what the kernel has (never skipped), the delay measured in the RTT where
netem exists, or refused in one line (exit 2) where it does not. `link clear` removes what was
set, the nftables tables of switch ports included (recorded for the teardown beforehand)."""
import re
import subprocess

import pytest

from testbed.emulation.faults import impair
from testbed.emulation.net import impair as text

from .conftest import TESTBED

pytestmark = [pytest.mark.integration, pytest.mark.hpn_fabric("hpn")]   # the plugin's fixtures

LOSS_PCT = 20
DELAY_MS = 20
PINGS = 3000        # at 20% loss, the measured share's spread is under 1% (10% of 20 is 2)


def link(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*TESTBED, "link", *args], capture_output=True, text=True, timeout=60)


def ping(emu, src, dst, count: int, interval: float) -> tuple[int, int, float, float]:
    """(sent, received, min RTT, avg RTT) of `count` pings from NIC src to NIC dst."""
    out = emu.net[src.host].cmd(f"ping -n -q -c {count} -i {interval} -W 2 -I {src.ip} {dst.ip}")
    sent, got = map(int, re.search(r"(\d+) packets transmitted, (\d+) received", out).groups())
    rtt = re.search(r"= ([\d.]+)/([\d.]+)/", out)
    return sent, got, *(map(float, rtt.groups()) if rtt else (0.0, 0.0))


def towards(emu, dst) -> list[str]:
    """The ToR ports that send to NIC `dst` (one per cable of it): a ping request's last hop."""
    return [emu.fabric.host_link(p).b_intf for p in dst.ports]


def nft_tables() -> str:
    return subprocess.run(["nft", "list", "tables", "netdev"], capture_output=True, text=True).stdout


def test_loss_set_on_a_live_link_is_measured_and_cleared(hpn_fabric_module):
    emu = hpn_fabric_module
    src, dst = emu.fabric.nic("p0s0h0-n0"), emu.fabric.nic("p0s0h1-n0")
    ports = towards(emu, dst)
    for port in ports:
        done = link("impair", port, "--loss", f"{LOSS_PCT}%")
        assert done.returncode == 0 and f"{port} sends with loss {LOSS_PCT}%" in done.stdout, done
    tables = [f"netdev {text.table_name(emu.run_id, p)}" for p in ports]
    assert set(tables) <= set(emu.state.listed("nft_tables")), "recorded for the teardown"
    try:
        sent, got, _, _ = ping(emu, src, dst, PINGS, 0.002)
        lost = 100 * (sent - got) / sent
        assert abs(lost - LOSS_PCT) <= LOSS_PCT / 10, f"{lost:.1f}% lost of {sent} with {LOSS_PCT}% set"
    finally:
        for port in ports:
            assert link("clear", port).returncode == 0
    assert not any(t.split()[1] in nft_tables() for t in tables)
    sent, got, _, _ = ping(emu, src, dst, 200, 0.005)
    assert got >= sent - 2, f"{sent - got} of {sent} lost once cleared"


def test_delay_is_measured_where_netem_exists_and_refused_where_not(hpn_fabric_module):
    emu = hpn_fabric_module
    src, dst = emu.fabric.nic("p0s0h0-n0"), emu.fabric.nic("p0s0h1-n0")
    ports = towards(emu, dst)
    if not impair.machine()["netem"]:
        done = link("impair", ports[0], "--delay", f"{DELAY_MS}ms")
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.strip().splitlines() == [
            "hpn-testbed: delay: netem is not available on this kernel (no sch_netem): here only "
            "loss (nftables) and rate (HTB) can be set"]
        assert "qdisc bfifo 10:" in subprocess.run(["tc", "qdisc", "show", "dev", ports[0]],
                                             capture_output=True, text=True).stdout, "untouched"
        return
    _, _, _, base = ping(emu, src, dst, 20, 0.05)
    for port in ports:
        assert link("impair", port, "--delay", f"{DELAY_MS}ms").returncode == 0
    try:
        _, got, low, avg = ping(emu, src, dst, 20, 0.05)
        assert got and low >= DELAY_MS, f"min RTT {low} ms with {DELAY_MS} ms set"
        assert abs(avg - base - DELAY_MS) <= DELAY_MS / 10, f"avg RTT {avg} ms, base {base} ms"
    finally:
        for port in ports:
            link("clear", port)
