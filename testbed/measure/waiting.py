"""How long the emulator's own processes waited for a CPU over a window: a run's validity read
from the emulator itself rather than from the whole machine's busy fraction.

The kernel counts, for every thread, the nanoseconds it spent runnable on a run queue without
running (/proc/PID/task/TID/schedstat, second field; it counts the time a cgroup's CPU quota
held it back too). `Waiting.start(pids)` reads it for every thread of each named process,
`snapshot.stop()` reads it again (`Waiting.of_run(state)`: a run's processes). A process's
waiting is what its worst thread waited in between, as a fraction of the window, and the worst
is the process that waited most. Not the sum over its threads: threads of one process that
queue at the same time (ovs-vswitchd's forwarding loop and its urcu and revalidator threads, or
the controller's thread per switch) hold back a piece of its work once, so their sum can pass
what any piece of work was delayed, while a starved process's busy thread alone waits most
of the window (docs/internals.md, "Validity"). A thread born in the window counts from zero; a thread
or process that ended within it is counted only as far as the start (a process gone by the
end is listed in `gone`). Where the run's cgroup is a cgroup v2 one, its cpu.pressure gives
one more figure: the fraction of the window in which some task of the run waited for a CPU.

The arithmetic (`waited`, `fractions`, `worst`, `pressure_fraction`) takes numbers and is
tested on fake ones; reading /proc takes a root directory, tested on fake trees. `run_roles` names a
run's processes by their part (ovs-vswitchd, controller, host agent p0s0h0, iperf3 p0s0h0).
Which figure makes a run invalid is decided elsewhere (the verdicts' validity rule).
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

PROC = Path("/proc")

ROLES = {"controller.launcher": "controller", "testbed.inhost.agent": "host agent",
         "iperf3": "iperf3", "testbed.inhost.blaster": "blaster", "testbed.inhost.prober": "prober",
         "testbed.inhost.detector": "detector", "mininet:": "shell"}


@dataclass(frozen=True)
class WaitReport:
    """What the named processes waited over `window_s`: the seconds each of their threads waited
    ({name: {tid: s}}), the run cgroup's pressure (None where there is none), and the processes
    gone before the end; per process (its worst thread, a fraction of the window) and the worst
    (name, fraction) or None follow from them."""
    window_s: float
    threads: dict[str, dict[int, float]]
    pressure: float | None = None
    gone: tuple[str, ...] = field(default=())

    @property
    def per_process(self) -> dict[str, float]:
        return fractions(self.threads, self.window_s)

    @property
    def worst(self) -> tuple[str, float] | None:
        return worst(self.per_process)


# ---- the arithmetic ----
def run_delay(schedstat: str) -> int:
    """The nanoseconds waited on a run queue, from a schedstat line ("RUN WAIT SLICES")."""
    return int(schedstat.split()[1])


def waited(before: Mapping[str, Mapping[int, int]], after: Mapping[str, Mapping[int, int]]
           ) -> dict[str, dict[int, float]]:
    """The seconds each thread a process has at the end waited since the start (from 0 for a
    thread born meanwhile, or whose count went back: its id reused), from ns counts."""
    out = {}
    for name, threads in after.items():
        start = before.get(name, {})
        out[name] = {tid: (ns - start.get(tid, 0) if ns >= start.get(tid, 0) else ns) / 1e9
                     for tid, ns in threads.items()}
    return out


def fractions(threads: Mapping[str, Mapping[int, float]], window_s: float) -> dict[str, float]:
    """Each process's waiting as a fraction of the window: its worst thread's seconds waited
    (the module's docstring says why not their sum)."""
    if window_s <= 0:
        return {name: 0.0 for name in threads}
    return {name: max(seconds.values(), default=0.0) / window_s for name, seconds in threads.items()}


def worst(per_process: Mapping[str, float]) -> tuple[str, float] | None:
    """The process that waited most, with its fraction (None for no process)."""
    return max(per_process.items(), key=lambda kv: (kv[1], kv[0]), default=None)


def pressure_total(text: str) -> int | None:
    """The `some` line's total (microseconds some task waited) of a cpu.pressure file."""
    for line in text.splitlines():
        if line.startswith("some "):
            for word in line.split()[1:]:
                key, _, value = word.partition("=")
                if key == "total" and value.isdigit():
                    return int(value)
    return None


def pressure_fraction(before: int | None, after: int | None, window_s: float) -> float | None:
    if before is None or after is None or window_s <= 0:
        return None
    return max(0, after - before) / 1e6 / window_s


# ---- reading /proc ----
def read_threads(pid: int, proc: Path = PROC) -> dict[int, int] | None:
    """tid -> ns waited, for every thread of `pid` now (None if the process is gone)."""
    try:
        tids = os.listdir(proc / str(pid) / "task")
    except OSError:
        return None
    out = {}
    for tid in tids:
        try:
            out[int(tid)] = run_delay((proc / str(pid) / "task" / tid / "schedstat").read_text())
        except (OSError, ValueError, IndexError):
            continue       # ended between the listing and the read
    return out


def read_pressure(cgroup: Path | None) -> int | None:
    try:
        return None if cgroup is None else pressure_total((cgroup / "cpu.pressure").read_text())
    except OSError:
        return None


class Waiting:
    """A window over the run queues of named processes: `Waiting.start({name: pid})`, later
    `.stop()` -> WaitReport."""

    def __init__(self, pids: Mapping[str, int], cgroup: Path | None, proc: Path,
                 clock: Callable[[], float]):
        self.pids, self.cgroup, self.proc, self.clock = dict(pids), cgroup, proc, clock
        self.t0 = clock()
        self.pressure0 = read_pressure(cgroup)
        self.before = {name: read_threads(pid, proc) or {} for name, pid in self.pids.items()}

    @classmethod
    def start(cls, pids: Mapping[str, int], cgroup: Path | None = None, proc: Path = PROC,
              clock: Callable[[], float] = time.monotonic) -> Waiting:
        """Snapshot each process's threads now; `cgroup`: the run's, for its cpu.pressure."""
        return cls(pids, cgroup, proc, clock)

    @classmethod
    def of_run(cls, state) -> Waiting:
        """A window over every live process of a run (its RunState), named by their parts,
        with its cgroup's pressure where there is one."""
        return cls.start(run_roles(state), run_cgroup(state))

    def stop(self) -> WaitReport:
        after = {name: read_threads(pid, self.proc) for name, pid in self.pids.items()}
        window = self.clock() - self.t0
        gone = tuple(sorted(name for name, threads in after.items() if threads is None))
        threads = waited(self.before, {n: t for n, t in after.items() if t is not None})
        return WaitReport(round(window, 3), threads,
                          pressure_fraction(self.pressure0, read_pressure(self.cgroup), window), gone)


# ---- a run's processes by name ----
def role_names(entries: list[tuple[int, str, str | None]]) -> dict[str, int]:
    """{name: pid} for (pid, marker, host or None) entries: the marker's part (ROLES), with the
    host it runs in (a node's shell outside every host: a switch's); a second of the same name
    is "NAME #2"."""
    out: dict[str, int] = {}
    for pid, marker, host in entries:
        role = "switch shell" if marker == "mininet:" and host is None else ROLES.get(marker, marker)
        base = " ".join(x for x in (role, host) if x)
        name, n = base, 1
        while name in out:
            n += 1
            name = f"{base} #{n}"
        out[name] = pid
    return out


def run_roles(state, proc: Path = PROC) -> dict[str, int]:
    """The live processes of a run (its RunState), and Open vSwitch's daemons, by name."""
    from testbed.emulation.cpu_precedence import daemons
    hosts = {_netns(pid, proc): name for name, pid in state.data.get("hosts", {}).items()}
    hosts.pop(None, None)
    entries = [(pid, marker, hosts.get(_netns(pid, proc))) for pid, marker in state.live_processes()]
    return {**daemons(), **role_names(entries)}


def run_cgroup(state) -> Path | None:
    """The run's cgroup where it has a cpu.pressure (cgroup v2), else None."""
    from testbed.emulation.cpu_precedence import GROUP
    for entry in state.data.get("knobs", []):
        if entry.startswith(GROUP) and (Path(entry[len(GROUP):]) / "cpu.pressure").is_file():
            return Path(entry[len(GROUP):])
    return None


def _netns(pid: int, proc: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(proc / str(pid) / "ns" / "net")
    except OSError:
        return None
    return st.st_dev, st.st_ino
