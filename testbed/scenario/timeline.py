"""The fault timeline: the phases of a fault run (one Timeline), and the one engine that plays
faults on a clock, for the fault scenarios (fault_harness.Workload.play, core-pipeline's fault,
segment-tor-failure) and the experiment files (testbed/experiments/runner.py) alike.

    schedule = Schedule()
    cut = schedule.fault(4.0, lambda: faults.link_down(link), seconds=3.0)   # repaired at 7 s
    schedule.action(0.0, start_traffic)
    schedule.play(t0)            # in time order, each at t0 + its time (monotonic clock)
    cut.injected, cut.repaired   # when they happened, on the clock play was given

While it plays, the innermost progress phase's note says which fault is next or in place and
the time left (`status`, pure), anew at each redraw of the live line.

A fault's `inject` returns its Handle (testbed/emulation/faults/inject.py), whose `repair()` the engine
calls `seconds` later; a fault with no `seconds` ends by itself when its inject returns (a flap
train, which holds the schedule until it ends). At one instant repairs come first, then
injections, then other actions.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from testbed.core import progress
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

    def __init__(self, inject: Callable, seconds: float | None, at: float = 0.0, label: str = ""):
        self.inject, self.seconds, self.at, self.label = inject, seconds, at, label
        self.handle = None
        self.injected: float | None = None
        self.repaired: float | None = None


class Schedule:
    """Timed faults and actions on one clock, played in time order by `play`."""

    def __init__(self, end: float = 0.0):
        self.events: list[tuple[float, int, Callable[[Callable[[], float]], None]]] = []
        self.faults: list[Played] = []
        self.end = end          # s when the timed work ends (the traffic), for the time left

    def fault(self, at: float, inject: Callable, seconds: float | None = None, label: str = "") -> Played:
        """`inject()` at `at`, its handle's repair() `seconds` later (None: it ends by itself);
        `label` names it in the progress line ("link-down p0s0h0-n0p0")."""
        played = Played(inject, seconds, at, label)
        self.faults.append(played)

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

        progress.note(lambda: self.status(time.monotonic() - t0))
        for t, _, event in sorted(self.events, key=lambda e: (e[0], e[1])):
            sleep_until(t0 + t)
            event(now)

    def status(self, t: float) -> str:
        """What the schedule is at, `t` s after its start: the fault in place or the next one,
        and the time left."""
        ordered = sorted(self.faults, key=lambda f: f.at)
        said = "no fault left"
        for k, f in enumerate(ordered, 1):
            name = f"fault {k} of {len(ordered)}" + (f" ({f.label})" if f.label else "")
            if t < f.at:
                said = f"{name} in {progress.clock(f.at - t)}"
                break
            if f.seconds is None and f.repaired is None:
                said = f"{name} in place (ends by itself)"
                break
            if f.seconds is not None and t < f.at + f.seconds:
                said = f"{name} in place, repaired in {progress.clock(f.at + f.seconds - t)}"
                break
        last = max([self.end, *(at for at, _, _ in self.events)])
        return f"{said}; {progress.clock(max(last - t, 0.0))} left" if ordered else \
            f"{progress.clock(max(last - t, 0.0))} left"
