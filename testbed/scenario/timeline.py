"""The fault timeline: the phases of a fault run (one Timeline), and the one engine that plays
faults on a clock, for the fault scenarios (fault_harness.Workload.play, core-pipeline's fault,
segment-tor-failure) and the experiment files (testbed/experiments/runner.py) alike.

    schedule = Schedule()
    cut = schedule.fault(4.0, lambda: faults.link_down(link), seconds=3.0)   # repaired at 7 s
    schedule.action(0.0, start_traffic)
    schedule.play(t0)            # in time order, each at t0 + its time (monotonic clock)
    cut.injected, cut.repaired   # when they happened, on the clock play was given

A fault's `inject` returns its Handle (testbed/emulation/faults/inject.py), whose `repair()` the engine
calls `seconds` later; a fault with no `seconds` ends by itself when its inject returns (a flap
train, which holds the schedule until it ends). At one instant repairs come first, then
injections, then other actions.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from testbed.core.wait import sleep_until

REPAIR, INJECT, ACTION = 0, 1, 2     # the order of events at one instant


@dataclass(frozen=True)
class Timeline:
    """The phases of a fault run (s): warm-up (not measured), baseline, fault, after the repair."""
    warm: float
    base: float
    fault: float
    after: float

    @classmethod
    def choose(cls, quick: bool, quick_steps: tuple, full_steps: tuple) -> Timeline:
        return cls(*(quick_steps if quick else full_steps))

    @property
    def fault_at(self) -> float:
        """When the fault starts: after warm-up and baseline."""
        return self.warm + self.base

    @property
    def seconds(self) -> float:
        return self.warm + self.base + self.fault + self.after

    def steps(self) -> list[float]:
        return [self.warm, self.base, self.fault, self.after]


class Played:
    """One fault of a Schedule: its handle once injected, and when it was injected and repaired
    (s on the clock `play` was given; None until then)."""

    def __init__(self, inject: Callable, seconds: float | None):
        self.inject, self.seconds = inject, seconds
        self.handle = None
        self.injected: float | None = None
        self.repaired: float | None = None


class Schedule:
    """Timed faults and actions on one clock, played in time order by `play`."""

    def __init__(self):
        self.events: list[tuple[float, int, Callable[[Callable[[], float]], None]]] = []

    def fault(self, at: float, inject: Callable, seconds: float | None = None) -> Played:
        """`inject()` at `at`, its handle's repair() `seconds` later (None: it ends by itself)."""
        played = Played(inject, seconds)

        def put(now):
            played.injected = now()
            played.handle = inject()
            if seconds is None:
                played.repaired = now()

        def repair(now):
            played.repaired = now()
            played.handle.repair()

        self.events.append((at, INJECT, put))
        if seconds is not None:
            self.events.append((at + seconds, REPAIR, repair))
        return played

    def action(self, at: float, action: Callable[[], object]) -> None:
        self.events.append((at, ACTION, lambda now: action()))

    def play(self, t0: float, origin: float | None = None) -> None:
        """Each event at t0 + its time (time.monotonic); times kept relative to `origin`
        (default t0)."""
        origin = t0 if origin is None else origin

        def now() -> float:
            return time.monotonic() - origin

        for t, _, event in sorted(self.events, key=lambda e: (e[0], e[1])):
            sleep_until(t0 + t)
            event(now)
