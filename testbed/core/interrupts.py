"""Signals during a run: they unwind it, except while it tears down.

SIGINT (Ctrl-C) raises KeyboardInterrupt, SIGTERM and SIGHUP (the terminal went away) raise
Terminated, so the context managers of a run tear down what it built (Terminated is no
KeyboardInterrupt: an interactive loop that survives Ctrl-C, like Mininet's CLI, still ends);
SIGUSR1 raises PartLost, the way a run's watchdog stops the main thread. Inside `teardown()` they
only count: a second Ctrl-C must not cut a teardown short. `install()` sets these handlers even
where the shell started us with SIGINT ignored (a background job of a script).
"""
from __future__ import annotations

import contextlib
import signal
import threading

from testbed.core.errors import PartLost

UNWIND = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
LOST = signal.SIGUSR1

_deferring = 0
_reason: dict[int, str] = {}     # thread-set reasons for a coming SIGUSR1
deferred: list[int] = []         # signals that arrived during a teardown
last: int | None = None          # the last signal that unwound a run


def _handler(signum, frame):
    global last
    if _deferring:
        deferred.append(signum)
        return
    last = signum
    if signum == LOST:
        raise PartLost(_reason.pop(signum, "a part of the run was lost"))
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


class Terminated(BaseException):
    """SIGTERM or SIGHUP: end the run (its teardowns run), whatever loop it is in."""


def install() -> None:
    """Take SIGINT, SIGTERM, SIGHUP and SIGUSR1 (main thread only)."""
    for sig in (*UNWIND, LOST):
        signal.signal(sig, _handler)


def installed() -> bool:
    return signal.getsignal(LOST) is _handler


@contextlib.contextmanager
def teardown():
    """Signals that arrive inside this block are noted, not raised."""
    global _deferring
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1


def interrupt_main(reason: str) -> None:
    """From another thread: raise PartLost(reason) in the main thread."""
    _reason[LOST] = reason
    signal.pthread_kill(threading.main_thread().ident, LOST)
