"""A probe's ping that falls behind its count (a starved CPU) is interrupted at its deadline and
keeps what it printed; one that will not end even then is named."""
import subprocess
import sys

import pytest

from testbed.core import errors
from testbed.measure.meters import finish_ping

LAGGING = ("import signal, sys, time\n"
           "signal.signal(signal.SIGINT, lambda *a: (print('3 packets transmitted, 3 received'),"
           " sys.exit(0)))\n"
           "print('ready', flush=True)\n"
           "time.sleep(60)\n")
DEAF = ("import signal, time\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n")


def started(code: str) -> subprocess.Popen:
    """A stand-in for ping, its SIGINT handling in place (as ping's is from its start)."""
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    return proc


def test_a_lagging_probe_is_interrupted_and_prints_its_summary():
    proc = started(LAGGING)
    try:
        finish_ping(proc, "the probe", timeout=0.2)
        assert proc.returncode == 0 and "3 packets transmitted" in proc.stdout.read()
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def test_a_probe_deaf_to_sigint_is_named():
    proc = started(DEAF)
    try:
        with pytest.raises(errors.TestbedError, match="the probe to finish after SIGINT"):
            finish_ping(proc, "the probe", timeout=0.1, grace=0.3)
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
