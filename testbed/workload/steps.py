"""A training job's steps, as its ranks print them, and their times phase by phase across a fault
timeline (pure: no root).

A step line (examples/jobs/train_ddp_torch.py prints one as each step ends):

    step N  T  DT  ...

T the step's end on CLOCK_MONOTONIC (s), DT its duration (s). CLOCK_MONOTONIC is the clock of
Python's time.monotonic() and every emulated host shares the kernel's, so a step can be set on
an experiment's timeline by subtracting the time its traffic started (testbed/experiments/
runner.py does).

A step belongs to a phase when its span [T - DT, T] overlaps the phase (more than touching it),
not when it merely ends there: a step held up by a fault ends after the fault began, often after
the fault's phase has ended, and counting steps by their end would leave out of the fault's phase
the very step the fault stretched. So a step that spans two phases counts in both; the median,
not the mean, keeps one such step from setting a phase's figure.
"""
from __future__ import annotations

import statistics

Step = tuple[int, float, float]      # (step, end, duration), as printed


def steps_of(text: str) -> list[Step]:
    """(step, end, duration) of every `step N T DT ...` line of a rank's output, in order; other
    lines, and step lines that do not parse, are skipped."""
    rows = []
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 4 and words[0] == "step":
            try:
                rows.append((int(words[1]), float(words[2]), float(words[3])))
            except ValueError:
                continue
    return rows


def in_phase(step: Step, start: float, end: float, offset: float = 0.0) -> bool:
    """Does the step's span [T - DT, T], shifted by -offset, overlap the phase [start, end]?"""
    _, t, d = step
    return t - d - offset < end and t - offset > start


def phase_steps(rows: list[Step], spans: list[tuple[str, float, float]], offset: float = 0.0) -> dict:
    """For each phase (name, start, end) of `spans`, in seconds since `offset` on the steps' clock:
    how many steps overlap it and their median duration (None when none does)."""
    inside = {name: [s[2] for s in rows if in_phase(s, start, end, offset)] for name, start, end in spans}
    return {"phases_s": {name: round(statistics.median(d), 3) if d else None for name, d in inside.items()},
            "counts": {name: len(d) for name, d in inside.items()}, "done": len(rows)}
