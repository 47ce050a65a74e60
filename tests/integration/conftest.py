"""Integration fixtures, built on the pytest plugin users get (testbed/pytest_plugin.py: the
hpn_fabric marker and fixtures, each fabric torn down and checked for leftovers): `up` and
`family_up` are its `running` under the names older tests use; helpers for the CLI's processes.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time

import pytest

from testbed.emulation.build import Options
from testbed.emulation.net import netdevs
from testbed.emulation.run import runstate
from testbed.model import make_fabric
from testbed.pytest_plugin import leftovers, running

__all__ = ["leftovers"]     # (tests import it from here)

TESTBED = [sys.executable, "-m", "testbed"]


def start_up(family: str, *args, **popen) -> subprocess.Popen:
    """`hpn-testbed up FAMILY` in the background, returned once it says it is up."""
    proc = subprocess.Popen([*TESTBED, "up", family, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **popen)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if "press Ctrl-C" in line:
            return proc
    proc.wait()
    raise AssertionError("up ended before it was up:\n" + "".join(lines))


class Lines:
    """A process's output lines as they come, each with when it came (time.monotonic, a reader
    thread): what a test compares with when it did something to the run."""

    def __init__(self, proc: subprocess.Popen):
        self.seen: list[tuple[float, str]] = []
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc):
        for line in proc.stdout:
            self.seen.append((time.monotonic(), line))

    def when(self, text: str) -> float | None:
        return next((t for t, line in list(self.seen) if text in line), None)

    def text(self) -> str:
        self._thread.join(timeout=10)
        return "".join(line for _, line in self.seen)


def finish(proc: subprocess.Popen, timeout: float = 120) -> str:
    """Wait for a process started by start_up (killed past `timeout`); its output."""
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return out or ""



@pytest.fixture
def up():
    """up(family, routing=None, **settings) -> a running Emulation; torn down and checked for
    leftovers after the test (the pytest plugin's `running`, as its hpn_up fixture does)."""
    with contextlib.ExitStack() as stack:
        def start(family, routing=None, **settings):
            return stack.enter_context(running(make_fabric(family, settings),
                                               Options(routing=routing or {})))
        yield start


@pytest.fixture(scope="module")
def family_up(request):
    """The family `request.param` (indirect parametrize), up once per module; new tests mark the
    module with @pytest.mark.hpn_fabric and take the plugin's hpn_fabric_module instead."""
    with running(make_fabric(request.param), Options()) as emu:
        yield emu


def run_of(pid: int) -> runstate.RunState | None:
    """The run a testbed process owns, once it has written its state."""
    for state in runstate.runs():
        if state.data["owner"][0] == pid:
            return state
    return None


def state_leftovers(state: runstate.RunState, fabric) -> list[str]:
    """What of a run (owned by another process) still exists: must be nothing after teardown."""
    import json

    from testbed.core import sh
    left = [f"run state {state.dir}"] if state.dir.exists() else []
    left += [f"process {pid} ({marker})" for pid, marker in state.live_processes()]
    names = set(os.listdir("/sys/class/net"))
    left += [f"interface {i}" for i in state.data["root_intfs"] if i in names]
    left += [f"bridge {b}" for b in netdevs.tagged_bridges(state.run_id)]
    left += [f"bridge {b}" for b in set(fabric.switches) & netdevs.all_bridges()]
    left += [f"directory {d}" for d in state.data.get("dirs", []) if os.path.exists(d)]
    tables = sh.run(["nft", "list", "tables"], check=False)
    left += [f"nft table {t}" for t in tables.splitlines() if state.run_id.replace("-", "_") in t]
    qdiscs = json.loads(sh.run(["tc", "-j", "qdisc", "show"], check=False) or "[]")
    left += [f"qdisc on {q['dev']}" for q in qdiscs if q.get("dev") in state.data["root_intfs"]]
    return left


def wait_for_headroom(timeout: float = 240) -> None:
    """Poll until the CPUs have headroom: a scenario measured on a saturated machine is invalid
    (another tenant, e.g. the VM lane, may keep it busy for a while)."""
    import time

    from testbed.measure.meters import cpu_busy_fraction
    deadline = time.monotonic() + timeout
    while cpu_busy_fraction(lambda: time.sleep(1.0))[1] > 0.5 and time.monotonic() < deadline:
        pass


def run_until_valid(*args: str, tries: int = 3, timeout: float = 400):
    """`hpn-testbed run ARGS --json --retries TRIES-1`: the testbed runs a scenario again (at most
    `tries` runs in all) while its result is invalid, a run on a saturated CPU having measured the
    emulator, not the fabric. Returns (process, results)."""
    import json
    import subprocess
    import sys
    wait_for_headroom(240)
    proc = subprocess.run([sys.executable, "-m", "testbed", "run", *args, "--retries", str(tries - 1),
                           "--json"], check=False, capture_output=True, text=True,
                          timeout=timeout * tries)
    results = json.loads(proc.stdout or '{"result": []}').get("result") or []
    assert results, f"no result (exit {proc.returncode}): {proc.stderr[-3000:]}"
    return proc, results


def sets(*settings: str) -> list[str]:
    """KEY=VALUE settings as --set options."""
    return [arg for kv in settings for arg in ("--set", kv)]
