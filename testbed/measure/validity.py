"""The validity rule, in one place: when a run measured the emulator rather than the fabric, its
verdict is `invalid`, never `reproduced` or `not reproduced`.

What distorts an emulated fabric is its own processes waiting to run. Each run of measured traffic
logs how long every process of the emulator waited on a run queue over the window the verdict reads
(its worst thread: testbed/measure/waiting.py; testbed/measure/waitlog.py, a report's WAITING
figures); `rule(busy, waited)` makes the verdict `invalid` when the worst of them waited more than
WAIT_LIMIT of the window, and says which process and how long. A run the emulator's own load bounded
is caught by the same figure: on a saturated CPU the emulator's runnable threads queue. The
machine's busy fraction (`Judgement(busy=...)`, each run's, testbed/measure/meters.py) stays in the
report (JUDGED_BUSY, the busiest) but decides nothing where the waiting was measured: a neighbour
that keeps the CPUs busy while the emulator, first in line (testbed/emulation/cpu_precedence.py),
never waits does not distort the fabric. Only a run with no waiting figure (a report recorded before
it was measured) is judged by the busy fraction, `cpu(*busy)`: above BUSY_LIMIT the CPU, not the
fabric, was the bottleneck (after Handigol et al., "Reproducible network experiments using
container-based emulation"). WAIT_LIMIT's measurement: docs/internals.md, "Validity".

A verdict read from rates relative to a baseline of the same run (the fault scenarios: a host's
throughput during a fault against before it, a flow's stall) reads the fabric's waiting alone
(`waitlog.run(skip=ENDPOINTS)`): the endpoints' waiting slows before and during alike, and their
keeping up is read from the rate instead, `kept_up`: a baseline under KEPT_UP of the line rate
was set by the CPU, not the fabric. Every reader
of validity (the judges, experiment files, bench/headroom.py) goes through `rule`, `cpu` and
`busiest`, so the measure can change here alone.
"""
from __future__ import annotations

from dataclasses import dataclass

JUDGED_BUSY = "cpu_busy_judged"   # the figure a report writes from Judgement.cpu_busy
WAITING = "waiting"               # the emulator's waiting a run logged (testbed/measure/waitlog.py)
BUSY_LIMIT = 0.9
WAIT_LIMIT = 0.2      # of the window, the worst process's worst thread's (docs/internals.md, "Validity")
ENDPOINTS = ("iperf3",)   # roles (waiting.ROLES) a relative verdict judges by `kept_up`, not waiting
KEPT_UP = 0.7             # of the line rate, the least a baseline of such a verdict must carry
GENERIC = "a validity check failed: the emulator, not the fabric, may have set what was measured"


@dataclass(frozen=True)
class Validity:
    """The rule applied to one verdict's runs: whether they are valid, the busiest figure read
    (None: the verdict reads none) and, if not valid, why in a few words."""
    valid: bool
    busy: float | None = None
    why: str | None = None
    waited: tuple[str, float] | None = None    # the process that waited most, its fraction


def rule(busy: tuple[float, ...], waited) -> Validity:
    """The rule on a verdict's runs: `waited`, the worst waiting process of its runs (name,
    fraction of the window; None: not measured), at most WAIT_LIMIT; where it was not measured,
    the busy fractions (`cpu`)."""
    if not waited:
        return cpu(*busy)
    name, fraction = waited[0], float(waited[1])
    peak = max(busy, default=None)
    if fraction <= WAIT_LIMIT:
        return Validity(True, peak, waited=(name, fraction))
    return Validity(False, peak, f"{name} waited {fraction:.0%} of the window for a CPU: the "
                    "emulator, not the fabric, set the pace", (name, fraction))


def kept_up(rate_mbit: float, line_mbit: float) -> bool:
    """Whether endpoints whose waiting is not read carried at least KEPT_UP of their line rate:
    below it, the CPU, not the fabric, was the bottleneck."""
    return rate_mbit >= KEPT_UP * line_mbit


def worst_waiting(figures) -> tuple[str, float] | None:
    """The worst waiting process a run's figures logged (WAITING), or None."""
    logged = figures.get(WAITING) if isinstance(figures, dict) else None
    top = logged.get("worst") if isinstance(logged, dict) else None
    ok = isinstance(top, (list, tuple)) and len(top) == 2 and isinstance(top[1], (int, float))
    return (str(top[0]), float(top[1])) if ok else None


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
        return None if check.why in judged.headline and check.why in judged.measured or \
            check.waited is None and "CPU" in judged.headline and "CPU" in judged.measured else check.why
    return None if judged.headline and ("invalid" in judged.measured or "CPU" in judged.measured) else GENERIC


def explain(judged):
    """`judged` (an invalid Judgement) with its cause in headline and measured."""
    cause = reason(judged)
    if cause is None:
        return judged
    judged.headline = f"{cause}; {judged.headline}" if judged.headline else cause
    judged.measured = f"{judged.measured}; invalid: {cause}"
    return judged
