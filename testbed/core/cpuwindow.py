"""The machine's CPU time, and the part of it spent while measured traffic was moving.

A verdict's validity check asks whether the CPU was saturated while the traffic its timings come
from was moving (Handigol et al., CoNEXT 2012: then the run measured the emulator, not the
fabric). A run of transfers first starts its senders and receivers (an agent per host, each a
Python interpreter, testbed/workload/collectives/runner.py), and only then says "go": that
start-up is CPU no timing covers. So the code that moves measured traffic opens a window around
the moving part (`moving()`), and testbed.measure.meters.cpu_busy_fraction counts the union of
the windows opened during its call (several jobs at once: one window while any moves), or the
whole call where none was opened. Anything else running meanwhile, start-ups of other jobs
included, is counted: it competes with the traffic. An observer (`observe`: the emulator's
waiting, testbed/measure/waiting.py) is told when the first window opens and the last closes,
so that it reads the same windows.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path

_lock = threading.Lock()
_open = 0                      # windows open now
_since = (0, 0)                # cpu_times() when the first of them opened
_inside = [0, 0]               # (total, idle) jiffies inside windows, closed ones
_observers: list = []          # objects with opened() and closed(), told of each union's ends


def cpu_times() -> tuple[int, int]:
    """(total, idle) jiffies of all CPUs so far, from /proc/stat's first line (idle + iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields), fields[3] + fields[4]


@contextmanager
def moving():
    """A window in which measured traffic moves (from "go" to the last byte read)."""
    global _open, _since
    with _lock:
        if _open == 0:
            _since = cpu_times()
            for observer in _observers:
                observer.opened()
        _open += 1
    try:
        yield
    finally:
        with _lock:
            _open -= 1
            if _open == 0:
                total, idle = cpu_times()
                _inside[0] += total - _since[0]
                _inside[1] += idle - _since[1]
                for observer in _observers:
                    observer.closed()


@contextmanager
def observe(observer):
    """Tell `observer` (opened(), closed()) of the windows' ends while the block runs."""
    with _lock:
        _observers.append(observer)
    try:
        yield observer
    finally:
        with _lock:
            _observers.remove(observer)


def inside() -> tuple[int, int]:
    """(total, idle) jiffies spent inside windows so far, an open one up to now."""
    with _lock:
        total, idle = _inside
        if _open:
            now = cpu_times()
            total, idle = total + now[0] - _since[0], idle + now[1] - _since[1]
        return total, idle
