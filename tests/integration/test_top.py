"""`hpn-testbed top` on a fabric another process runs (`up`): in a pseudo-terminal, a cable's load
rises within a second of a flow starting; `top --web` serves a page that headless Chromium draws
with every switch and that keeps updating (its screenshot is kept in the test's directory)."""
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request

import pexpect
import pytest

from testbed.measure.liveview import connections
from testbed.model import make_fabric

from .conftest import TESTBED, run_of, start_up

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
SRC, DST, PORT = "p0e0h0", "p1e0h0", 5299       # across pods: the flow crosses every tier


@pytest.fixture(scope="module")
def clos3_up():
    proc = start_up("clos3")
    try:
        yield run_of(proc.pid)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)


def in_host(state, host: str, *argv: str, **popen) -> subprocess.Popen:
    """`argv` in a host's network namespace (entered through the PID holding it)."""
    return subprocess.Popen(["nsenter", "-t", str(state.data["hosts"][host]), "-n", *argv], **popen)


def ended(*procs: subprocess.Popen) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)


def up_mbps(screen: str, cable: str) -> float:
    """The last value the view drew in `cable`'s up column (0 if it has not drawn the row yet)."""
    rows = re.findall(rf"^{re.escape(cable)}\s+([0-9.]+)\s", ANSI.sub("", screen).replace("\r", "\n"), re.M)
    return float(rows[-1]) if rows else 0.0


def test_a_cables_load_rises_within_a_second_of_a_flow_starting(clos3_up):
    fab = make_fabric("clos3", {})
    link = fab.host_link(fab.nic(SRC).ports[0])
    cable = f"{link.a}:{link.a_port}-{link.b}:{link.b_port}"
    top = pexpect.spawn(TESTBED[0], [*TESTBED[1:], "top", "--interval", "0.2"], dimensions=(60, 140),
                        env={**os.environ, "TERM": "xterm"}, encoding="utf-8", timeout=20)
    server = in_host(clos3_up, DST, "iperf3", "-s", "-1", "-p", str(PORT), stdout=subprocess.DEVNULL)
    client = None
    try:
        top.expect(re.escape(cable))                  # drawn, idle
        screen = ""
        time.sleep(0.3)                               # the server listening (iperf3 retries anyway)
        client = in_host(clos3_up, SRC, "iperf3", "-c", fab.nic(DST).ip, "-p", str(PORT), "-t", "4",
                         "--connect-timeout", "3000", stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10             # the flow starts: its connection is up
        while not any(f":{PORT}" in f for f in connections({SRC: clos3_up.data["hosts"][SRC]})):
            assert time.monotonic() < deadline and client.poll() is None, "iperf3 never connected"
            time.sleep(0.02)
        started = time.monotonic()
        while time.monotonic() - started < 5 and up_mbps(screen, cable) < 1.0:
            try:
                screen += top.read_nonblocking(65536, timeout=0.1)
            except pexpect.TIMEOUT:
                pass
        seen = time.monotonic() - started
        assert up_mbps(screen, cable) >= 1.0, f"{cable} never showed the flow: {ANSI.sub('', screen)[-2000:]}"
        assert seen < 1.0, f"{cable}'s load showed {seen:.2f} s after the flow started"
    finally:
        top.kill(signal.SIGINT)
        top.close(force=True)
        ended(*(p for p in (client, server) if p))


def test_the_web_page_draws_every_switch_and_keeps_updating(clos3_up, tmp_path):
    chromium = shutil.which("chromium")
    assert chromium, "chromium is needed (scripts/install.sh installs it with the test packages)"
    web = subprocess.Popen([*TESTBED, "top", "--web", "--port", "0", "--interval", "0.2"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = web.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url, line
        deadline = time.monotonic() + 10         # the first view taken, so the page has one to draw
        while json.loads(urllib.request.urlopen(url[0] + "view.json", timeout=5).read()).get("waiting"):
            assert time.monotonic() < deadline, "top --web served no view within 10 s"
            time.sleep(0.1)
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=3000"]
        dom = subprocess.run([chromium, *flags, "--dump-dom", url[0]], capture_output=True, text=True,
                             timeout=90, check=True).stdout
        shot = tmp_path / "top-web.png"
        subprocess.run([chromium, *flags, "--window-size=1100,700", f"--screenshot={shot}", url[0]],
                       capture_output=True, timeout=90, check=True)
        print(f"top --web screenshot: {shot}")
        fab = make_fabric("clos3", {})
        drawn = set(re.findall(r'data-switch="([^"]+)"', dom))
        assert drawn == set(fab.switches), drawn
        assert len(re.findall(r"data-cable=", dom)) == len(fab.links)
        updates = int(re.search(r'id="updates" data-n="(\d+)"', dom)[1])
        assert updates >= 2, "the page drew once and stopped"
        assert shot.stat().st_size > 10_000
    finally:
        web.send_signal(signal.SIGINT)
        try:
            web.wait(timeout=15)
        finally:
            ended(web)
    assert web.returncode == 0
