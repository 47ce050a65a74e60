"""The validity rule, in one place: when a run measured the emulator rather than the fabric, its
verdict is `invalid`, never `reproduced` or `not reproduced`.

A judge states once the busy figures its verdict rests on (`Judgement(busy=...)`, the fraction
of the window the machine's CPUs were busy in each run it reads, testbed/measure/meters.py
CpuMeter); `cpu(*busy)` applies the rule to them and gives the figure that is reported
(JUDGED_BUSY, the busiest) and the reason an invalid verdict states. Above BUSY_LIMIT the CPU,
not the fabric, was the bottleneck (after Handigol et al., "Reproducible network experiments
using container-based emulation"). Every reader of validity (the judges, experiment files,
bench/headroom.py) goes through `cpu` and `busiest`, so the measure can change here alone.
"""
from __future__ import annotations

from dataclasses import dataclass

JUDGED_BUSY = "cpu_busy_judged"   # the figure a report writes from Judgement.cpu_busy
BUSY_LIMIT = 0.9
GENERIC = "a validity check failed: the emulator, not the fabric, may have set what was measured"


@dataclass(frozen=True)
class Validity:
    """The rule applied to one verdict's runs: whether they are valid, the busiest figure read
    (None: the verdict reads none) and, if not valid, why in a few words."""
    valid: bool
    busy: float | None = None
    why: str | None = None


def cpu(*busy: float) -> Validity:
    """The rule on the busy fractions of the runs a verdict reads: valid while each is at most
    BUSY_LIMIT."""
    peak = max(busy, default=None)
    if peak is None or peak <= BUSY_LIMIT:
        return Validity(True, peak)
    return Validity(False, peak, f"CPU {peak:.0%} busy: the emulator, not the fabric, set the rate")


def busiest(figures) -> float | None:
    """The busy fraction a result's validity check read (its JUDGED_BUSY figure), or None."""
    value = figures.get(JUDGED_BUSY) if isinstance(figures, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def reason(judged) -> str | None:
    """The cause to add to an invalid Judgement's headline and measured text; None if the judge
    already named one."""
    check = judged.validity
    if not check.valid:
        return None if "CPU" in judged.headline and "CPU" in judged.measured else check.why
    return None if judged.headline and ("invalid" in judged.measured or "CPU" in judged.measured) else GENERIC


def explain(judged):
    """`judged` (an invalid Judgement) with its cause in headline and measured."""
    cause = reason(judged)
    if cause is None:
        return judged
    judged.headline = f"{cause}; {judged.headline}" if judged.headline else cause
    judged.measured = f"{judged.measured}; invalid: {cause}"
    return judged
