"""The emulator first in line for the CPU, on this machine's kernel (root, no fabric: no flock).

The waiting measure cannot look away: a CPU-bound child held to 20% of a CPU by a cgroup's
quota waits most of the window (testbed/measure/waiting.py). With precedence
(testbed/emulation/cpu_precedence.py) the same child, sharing its one CPU with a busy loop at
normal priority, waits little, while the busy loop waits most of the window (so the two did
compete). And after apply and restore every thread of a process the test made is back in its
cgroup with its nice value, threads born meanwhile included, and the run's cgroup is gone.
Every cgroup a test makes is removed in a `finally`.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.core import precedence
from testbed.emulation import cpu_precedence
from testbed.measure.waiting import Waiting

pytestmark = pytest.mark.integration

MACHINE = precedence.choose()
CPU = min(os.sched_getaffinity(0))
WINDOW_S = 1.5
SPIN = f"import os\nos.sched_setaffinity(0, {{{CPU}}})\nprint('go', flush=True)\nwhile True:\n    pass\n"
WORKER = """import os, sys, threading, time
def idle():
    while True:
        time.sleep(1)
for _ in range(2):
    threading.Thread(target=idle, daemon=True).start()
print('go', flush=True)
for line in sys.stdin:
    threading.Thread(target=idle, daemon=True).start()
    print('born', flush=True)
"""
MECHANISMS = [MACHINE, precedence.NICE_ONLY] if MACHINE.cgroup else [precedence.NICE_ONLY]


class State:
    """The part of a RunState apply and admit use, kept in memory."""
    admit = None

    def __init__(self, run_id: str, pids=()):
        self.run_id, self.pids = run_id, list(pids)
        self.data = {"knobs": [], "about": {}}

    def add(self, key, *items):
        self.data[key].extend(items)

    def save(self):
        pass

    def live_processes(self):
        return [(pid, "test") for pid in self.pids]


@contextlib.contextmanager
def started(code: str):
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline() == "go\n"
        yield proc
    finally:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def cgroup(name: str, settings: dict[str, str] = None):
    """A cgroup of the test in this machine's cpu hierarchy, emptied and removed at the end."""
    if not MACHINE.cgroup:
        pytest.skip(f"no cgroup cpu controller here ({MACHINE.describe()})")
    group = MACHINE.hierarchy / f"hpn-test-{name}-{os.getpid()}"
    group.mkdir()
    try:
        for knob, value in (settings or {}).items():
            (group / knob).write_text(value)
        yield group
    finally:
        for tid in (group / MACHINE.threads_file).read_text().split():
            with contextlib.suppress(OSError):
                (MACHINE.hierarchy / MACHINE.move_file).write_text(tid)
        group.rmdir()


def quota_20_percent() -> dict[str, str]:
    if MACHINE.kind == "cgroup1":
        return {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "20000"}
    return {"cpu.max": "20000 100000"}


def wait_over_window(pids: dict[str, int]):
    snap = Waiting.start(pids)
    time.sleep(WINDOW_S)              # the measured window itself
    return snap.stop()


def test_a_child_held_to_20_percent_of_a_cpu_is_seen_waiting():
    with cgroup("quota", quota_20_percent()) as group, started(SPIN) as child:
        (group / "cgroup.procs").write_text(str(child.pid))
        report = wait_over_window({"child": child.pid})
    assert report.worst[0] == "child" and report.per_process["child"] > 0.5, report


@pytest.mark.parametrize("mech", MECHANISMS, ids=lambda m: m.kind)
def test_with_precedence_a_child_beside_a_busy_loop_waits_little(mech, monkeypatch):
    monkeypatch.setattr(cpu_precedence, "daemons", dict)       # the test's processes only
    with started(SPIN) as neighbour, started(SPIN) as child:
        state = State(f"test-{os.getpid()}", [child.pid])
        try:
            cpu_precedence.apply(state, mech)
            report = wait_over_window({"child": child.pid, "neighbour": neighbour.pid})
        finally:
            cpu_precedence.restore(state.data["knobs"])
    assert report.per_process["neighbour"] > 0.5, report         # they did compete for one CPU
    assert report.per_process["child"] < 0.3, report
    assert report.worst[0] == "neighbour"


def settings(pid: int, kind: str) -> dict[int, tuple[str | None, int]]:
    """Each thread of `pid`: (its cgroup in this machine's cpu hierarchy, its nice value)."""
    out = {}
    for tid in cpu_precedence.threads(pid):
        text = Path(f"/proc/{pid}/task/{tid}/cgroup").read_text()
        out[tid] = (precedence.cgroup_of(text, kind), os.getpriority(os.PRIO_PROCESS, tid))
    return out


@pytest.mark.parametrize("mech", MECHANISMS, ids=lambda m: m.kind)
def test_apply_then_restore_puts_every_setting_back(mech, monkeypatch):
    monkeypatch.setattr(cpu_precedence, "daemons", dict)
    kind = MACHINE.kind if MACHINE.cgroup else "cgroup2"
    with cgroup("home") if MACHINE.cgroup else contextlib.nullcontext() as home, started(WORKER) as worker:
        if home is not None:
            (home / "cgroup.procs").write_text(str(worker.pid))  # somewhere other than the root
        first, *others = cpu_precedence.threads(worker.pid)
        os.setpriority(os.PRIO_PROCESS, others[0], 3)             # threads need not agree
        before = settings(worker.pid, kind)
        state = State(f"test-{os.getpid()}", [worker.pid])
        cpu_precedence.apply(state, mech)
        during = settings(worker.pid, kind)
        worker.stdin.write("thread\n")
        worker.stdin.flush()
        assert worker.stdout.readline() == "born\n"                # a thread born with precedence
        born = set(cpu_precedence.threads(worker.pid)) - set(before)
        assert len(born) == 1
        done = cpu_precedence.restore(state.data["knobs"])
        after = settings(worker.pid, kind)
    assert during != before and done
    assert {tid: after[tid] for tid in before} == before
    assert after[born.pop()] == before[first]                    # where its process came from
    if mech.cgroup:
        assert not (mech.hierarchy / f"{precedence.PREFIX}{state.run_id}").exists()
