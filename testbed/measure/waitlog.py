"""The emulator's waiting over the windows a scenario's verdicts read, one figure per run.

A scenario's run (`Scenario.execute`) is measured inside `collecting()`. A run of measured
traffic is one call of testbed.measure.meters.cpu_busy_fraction (the busy fraction a verdict
reads comes from the same call), or a block in `run()` (a training step whose busy fraction a
CpuMeter reads over its phases' windows), and its window is the same as that fraction's: the
union of the windows the traffic opened around its moving part (testbed.core.cpuwindow.moving,
told to this module by `cpuwindow.observe`), or the whole call where it opened none. A window
opened outside any run is a run of its own. A run is the timing a verdict reads, not each
window in it: a phase of a few milliseconds inside a step is not timed alone, and the
scheduler's latency of a few milliseconds would read as a large part of its window. For each run
the log keeps what every process of this program's live fabrics waited (testbed/measure/
waiting.py: a fraction of the window) and its worst; `figures()` is what a report records
under WAITING, read by the validity rule (testbed/measure/validity.py).

`merge` (several windows into one run's figure) is arithmetic, tested on fake reports.
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager, nullcontext
from pathlib import Path

from testbed.core import cpuwindow
from testbed.measure.validity import WAITING  # noqa: F401  the figures' key (re-exported)
from testbed.measure.waiting import Waiting, WaitReport, run_cgroup, run_roles

_log: Log | None = None  # the log of the scenario run in progress (collecting())


def merge(reports: list[WaitReport]) -> WaitReport | None:
    """One figure for several windows: each thread's seconds waited summed over them, over the
    sum of the windows (so each process's figure is its worst thread's over the whole run), the
    pressure likewise where every window has one."""
    total = sum(r.window_s for r in reports)
    if not reports or total <= 0:
        return reports[0] if reports else None
    threads: dict[str, dict[int, float]] = {}
    for r in reports:
        for name, seconds in r.threads.items():
            mine = threads.setdefault(name, {})
            for tid, s in seconds.items():
                mine[tid] = mine.get(tid, 0.0) + s
    pressures = [r.pressure for r in reports]
    pressure = None if None in pressures else sum(p * r.window_s for p, r in zip(pressures, reports)) / total
    gone = tuple(sorted({g for r in reports for g in r.gone}))
    return WaitReport(round(total, 3), threads, pressure, gone)


def without(pids: dict[str, int], roles: tuple[str, ...]) -> dict[str, int]:
    """`pids` but the processes of `roles` ("iperf3": "iperf3 p0s0h1", "iperf3 p0s0h1 #2")."""
    return {name: pid for name, pid in pids.items()
            if not any(name == r or name.startswith(f"{r} ") for r in roles)}


def summary(runs: list[WaitReport]) -> dict:
    """What a report records: each run's window, worst process and pressure, and the worst of
    all runs (the process, its fraction)."""
    rows = [{"window_s": r.window_s, "worst": [r.worst[0], round(r.worst[1], 4)] if r.worst else None,
             "pressure": None if r.pressure is None else round(r.pressure, 4)} for r in runs]
    worsts = [r.worst for r in runs if r.worst]
    top = max(worsts, key=lambda w: (w[1], w[0]), default=None)
    return {"runs": rows, "worst": [top[0], round(top[1], 4)] if top else None}


def own_states() -> list:
    """The run states of every fabric this program runs now (its PID their owner)."""
    from testbed.core.errors import ParamError
    from testbed.emulation.run import runstate
    out = []
    for path in sorted(runstate.ROOT.glob("*/state.json")):
        try:
            state = runstate.RunState.load(path.parent)
        except (ParamError, OSError):
            continue
        if (state.data.get("owner") or [None])[0] == os.getpid():
            out.append(state)
    return out


def own_cgroups() -> list[Path]:
    """The cgroups of this program's live fabrics (a test or bench that starves them)."""
    from testbed.emulation.cpu_precedence import GROUP
    return [Path(e[len(GROUP):]) for state in own_states() for e in state.data["knobs"]
            if e.startswith(GROUP)]


def own_fabrics() -> tuple[dict[str, int], Path | None]:
    """The live processes of every fabric this program runs now, by name, and the first of
    their cgroups with a cpu.pressure (None if none)."""
    pids: dict[str, int] = {}
    cgroup = None
    for state in own_states():
        for name, pid in run_roles(state).items():
            if pid not in pids.values():
                pids[name if name not in pids else f"{name} ({state.run_id})"] = pid
        cgroup = cgroup or run_cgroup(state)
    return pids, cgroup


class Log:
    """The runs' waiting of one scenario run (see the module's docstring)."""

    def __init__(self, find=own_fabrics):
        self.find, self.runs = find, []
        self._lock = threading.Lock()
        self._depth, self._call, self._windows, self._open = 0, None, [], None
        self._skip: tuple[str, ...] = ()

    # cpuwindow's observer: the first window opened, the last closed
    def opened(self) -> None:
        pids, cgroup = self.find()
        self._open = Waiting.start(without(pids, self._skip), cgroup)

    def closed(self) -> None:
        window, self._open = self._open, None
        if window is None:
            return
        report = window.stop()
        with self._lock:
            if self._depth:
                self._windows.append(report)
            else:
                self.runs.append(report)

    @contextmanager
    def run(self, skip: tuple[str, ...] = ()):
        """One run of measured traffic (a cpu_busy_fraction call): its windows, or itself.
        `skip`: the roles (waiting.ROLES) whose waiting this run does not read."""
        with self._lock:
            self._depth += 1
            if self._depth == 1:
                pids, cgroup = self.find()
                self._skip = skip
                self._call, self._windows = Waiting.start(without(pids, skip), cgroup), []
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    whole, self._call, self._skip = self._call.stop(), None, ()
                    self.runs.append(merge(self._windows) or whole)

    def figures(self) -> dict:
        return summary(self.runs)


@contextmanager
def collecting(find=own_fabrics):
    """Log the emulator's waiting over every run of measured traffic while the block runs."""
    global _log
    log, outer = Log(find), _log
    _log = log
    try:
        with cpuwindow.observe(log):
            yield log
    finally:
        _log = outer


def run(skip: tuple[str, ...] = ()):
    """The context of one run of measured traffic (meters.cpu_busy_fraction, or a step timed by
    a CpuMeter, or a fault scenario's timeline): logged where a scenario run is collecting,
    nothing otherwise. `skip`: roles whose waiting the run's verdict does not read
    (validity.ENDPOINTS)."""
    return _log.run(skip) if _log is not None else nullcontext()
