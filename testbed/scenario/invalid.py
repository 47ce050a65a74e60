"""Why a result is invalid, said where the user looks: in `measured`, the headline and the
figure's title (which carries the headline, testbed/scenario/plots.py).

A judge says `invalid` when the emulator, not the fabric, may have set what it measured. The
commonest cause is a busy CPU (other work on the machine, or the run itself): every `cpu_busy`
figure a run recorded is looked at (or, where the judge said which runs its verdict rests on,
those: JUDGED_BUSY), and the busiest named, e.g. "CPU 95% busy: the emulator, not the fabric,
set the rate". A judge that already gave its own reason keeps it.
"""
from __future__ import annotations

JUDGED_BUSY = "cpu_busy_judged"   # the figure Scenario.report writes from Judgement.cpu_busy
BUSY_LIMIT = 0.9      # above this the CPU, not the fabric, was the bottleneck (Handigol et al.)
GENERIC = "a validity check failed: the emulator, not the fabric, may have set what was measured"


def busiest(figures) -> float | None:
    """The CPU busy fraction a result's validity check read (the judge's JUDGED_BUSY figure: the
    busiest run its verdict rests on); for a result without it, the highest anywhere in
    `figures` (keys naming cpu_busy)."""
    if isinstance(figures, dict) and isinstance(figures.get(JUDGED_BUSY), (int, float)):
        return float(figures[JUDGED_BUSY])
    found: list[float] = []

    def walk(value, key: str = "") -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, str(k))
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v, key)
        elif "cpu_busy" in key and isinstance(value, (int, float)) and not isinstance(value, bool):
            found.append(float(value))
    walk(figures)
    return max(found) if found else None


def reason(figures: dict, headline: str, measured: str) -> str | None:
    """The cause to add to an invalid result's headline and measured text; None if the judge
    already named one."""
    busy = busiest(figures)
    if busy is not None and busy > BUSY_LIMIT:
        cause = f"CPU {busy:.0%} busy: the emulator, not the fabric, set the rate"
        return None if "CPU" in headline and "CPU" in measured else cause
    return None if headline and ("invalid" in measured or "CPU" in measured) else GENERIC


def explain(judged, figures: dict):
    """`judged` (a Judgement) with its invalid verdict's cause in headline and measured."""
    cause = reason(figures, judged.headline, judged.measured)
    if cause is None:
        return judged
    judged.headline = f"{cause}; {judged.headline}" if judged.headline else cause
    judged.measured = f"{judged.measured}; invalid: {cause}"
    return judged
