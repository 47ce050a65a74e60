"""Why a result is invalid, said where the user looks: in `measured`, the headline and the
figure's title (which carries the headline, scenarios/kit/plots.py).

A judge says `invalid` when the emulator, not the fabric, may have set what it measured. The
commonest cause is a busy CPU (other work on the machine, or the run itself): every `cpu_busy`
figure a run recorded is looked at, and the busiest named, e.g. "CPU 95% busy: the emulator,
not the fabric, set the rate". A judge that already gave its own reason keeps it.
"""
from __future__ import annotations

BUSY_LIMIT = 0.9      # above this the CPU, not the fabric, was the bottleneck (Handigol et al.)
GENERIC = "a validity check failed: the emulator, not the fabric, may have set what was measured"


def busiest(figures) -> float | None:
    """The highest CPU busy fraction anywhere in `figures` (keys naming cpu_busy)."""
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
