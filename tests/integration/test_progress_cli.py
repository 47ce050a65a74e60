"""What `hpn-testbed up --check` shows while it works: a live status line in a pseudo-terminal,
timestamped phase lines on a pipe, and only JSON on stdout under --json (issue 25)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager

import pexpect

UP = [sys.executable, "-m", "testbed", "up", "hpn", "--check"]
# A terminal window's TERM, whatever the test run's own (a pipe, CI and the distro lane have
# TERM=dumb or none; a dumb terminal gets the plain lines instead of the live status)
TERMINAL = {**os.environ, "TERM": "xterm-256color"}


@contextmanager
def in_a_terminal(args: list[str], timeout: float):
    """`up ARGS` in a pseudo-terminal. If the test fails while it runs, it leaves through SIGTERM,
    which tears the fabric down, and is waited for: pexpect's own close would SIGKILL it a
    moment after its SIGHUP, leaving a half-built fabric (and a zombie owner) to every later test."""
    child = pexpect.spawn(UP[0], args, encoding="utf-8", timeout=timeout, dimensions=(24, 160), env=TERMINAL)
    try:
        yield child
    finally:
        if child.isalive():
            child.kill(signal.SIGTERM)
            child.expect(pexpect.EOF, timeout=600)
        child.wait()      # reaped before the terminal closes, so close() signals nothing
        child.close()


def test_in_a_terminal_the_bring_up_shows_a_live_status():
    with in_a_terminal(UP[1:], 180) as child:
        # the status line names the running phases and the innermost's clock, redrawn as it goes
        child.expect(r"bring-up > (controller|namespaces|hosts|switches|learning|checking)[^\r\n]*\[\d+s\]")
        child.expect(r"checks > \w[^\r\n]*\[\d+s\]")
        child.expect("up in")
        child.expect(pexpect.EOF)
    assert child.exitstatus == 0


def test_on_a_pipe_the_bring_up_prints_timestamped_phase_lines():
    proc = subprocess.run(UP, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    phases = [re.sub(r"^\d\d:\d\d:\d\d ", "", line) for line in lines]
    assert all(re.match(r"\d\d:\d\d:\d\d ", line) for line in lines), lines
    for expected in ("bring-up", "bring-up > controller", "bring-up > learning NIC ports",
                     "bring-up > checking every switch's routes", "checks > wiring"):
        assert expected in phases, phases
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", proc.stderr)


def test_under_json_stdout_is_only_the_json_and_stderr_has_no_progress():
    proc = subprocess.run([*UP, "--json"], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ok"] is True
    assert "bring-up" not in proc.stderr


def test_a_segment_bring_up_in_a_terminal_shows_progress_at_least_every_2_s():
    """The largest shape (one full HPN segment, 1,088 NICs: the longest bring-up) never leaves
    the user without a sign of life: from the first status line to `up in`, no gap between two
    writes to the terminal exceeds 2 s. Then Ctrl-C tears it down (exit 130, "interrupted;
    cleaned up", nothing left: the conftest's leftover check)."""
    with in_a_terminal([*UP[1:-1], "--preset", "segment"], 600) as child:
        child.expect(r"bring-up > [^\r\n]*\[\d+s\]")
        last, gaps, seen = time.monotonic(), [], ""
        while "press Ctrl-C" not in seen:   # printed once the fabric is up, after `up in`
            try:
                seen = (seen + child.read_nonblocking(4096, timeout=10))[-400:]
            except pexpect.TIMEOUT:
                pass   # ten silent seconds: recorded as a gap below
            now = time.monotonic()
            gaps.append(now - last)
            last = now
        assert max(gaps) <= 2.0, f"longest silence {max(gaps):.1f} s"
        child.sendintr()
        child.expect("interrupted; cleaned up", timeout=300)
        child.expect(pexpect.EOF)
    assert child.exitstatus == 130, child.before
