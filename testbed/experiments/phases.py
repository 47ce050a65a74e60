"""The phases of an experiment (before the faults, during each, after them) and the mean of a
rate series in each, with the relative loss during each fault: pure, unit-tested."""
from __future__ import annotations

from itertools import pairwise

BEFORE, AFTER = "before", "after"


def phases(faults, warm: float, settle: float, end: float) -> list[tuple[str, float, float]]:
    """(name, start, end) of each phase, in seconds since the traffic started. A fault's phase
    starts `settle` s after it (failover is not instant; a flap train counts from its first flap)
    and `after` starts `settle` s after the last fault ended."""
    ordered = sorted(faults, key=lambda f: f.at)
    if not ordered:
        return [(BEFORE, warm, end)]
    out = [(BEFORE, warm, ordered[0].at)]
    for k, f in enumerate(ordered, 1):
        start = f.at if f.self_timed else min(f.at + settle, f.end)
        out.append((fault_phase(k, f), start, f.end))
    out.append((AFTER, min(max(f.end for f in ordered) + settle, end), end))
    return out


def fault_phase(k: int, fault) -> str:
    return f"fault {k} ({fault.label})"


def mean_in(series: list, start: float, end: float) -> float | None:
    """Time-weighted mean over [start, end] of a rate series [[t, v], ...], each point the rate
    over the interval that ends at t (as meters.rates gives them); None if nothing falls inside."""
    total = weight = 0.0
    for (t0, _), (t1, v) in pairwise(series):
        overlap = min(t1, end) - max(t0, start)
        if overlap > 0:
            total += v * overlap
            weight += overlap
    return round(total / weight, 3) if weight else None


def phase_means(series: list, spans: list[tuple[str, float, float]]) -> dict[str, float | None]:
    return {name: mean_in(series, start, end) for name, start, end in spans}


def losses(means: dict[str, float | None]) -> dict[str, float | None]:
    """The relative loss of each fault phase against `before`: 1 - during / before."""
    before = means.get(BEFORE)
    return {name: (round(1 - v / before, 4) if before and v is not None else None)
            for name, v in means.items() if name not in (BEFORE, AFTER)}


ROSE = 0.05     # a rate that rose more than this during a fault: the fault did not bite


def rose(name: str, item_losses: dict[str, float | None]) -> list[str]:
    """A warning for each fault during which watched item `name` carried more than ROSE above
    its `before` rate: the fault did not limit it, something else does (two cross-pod flows are
    held by the oversubscribed core, not by the NIC whose link went down), so a bound on its loss
    or throughput says nothing about the fault."""
    return [f"WARNING: {name} rose {-loss:.0%} above its before rate during {phase}: the fault did "
            "not limit it (something else does, e.g. the core, not the NIC)"
            for phase, loss in item_losses.items() if loss is not None and -loss > ROSE]
