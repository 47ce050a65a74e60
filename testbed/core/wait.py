"""Waiting: poll a condition until it holds (readiness), or follow a schedule (fault timelines)."""
from __future__ import annotations

import time

from testbed.core.errors import TestbedError


def wait_for(what: str, condition, timeout: float, interval: float = 0.05):
    """Poll `condition` until it returns something truthy; raise naming `what` on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TestbedError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def sleep_until(t: float) -> None:
    """Sleep until time.monotonic() reaches `t`: a fault's own schedule, not a readiness wait."""
    delay = t - time.monotonic()
    if delay > 0:
        time.sleep(delay)
