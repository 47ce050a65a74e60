"""Repeats: a scenario run N times, each on fresh bring-ups, and what stayed put across the runs:
every number's median and spread (lowest to highest) and how many runs reproduced the claim."""
from __future__ import annotations

import statistics
from dataclasses import asdict
from pathlib import Path

from testbed.core import files, progress
from testbed.scenario.base import REPRODUCED, Result


def numbers(figures: dict, prefix: str = "") -> dict[str, float]:
    """Every number of `figures` by dotted key (lists and time series left out: their entries are
    rounds, not figures that repeat)."""
    out = {}
    for key, value in figures.items():
        name = f"{prefix}{key}"
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (int, float)):
            out[name] = float(value)
        elif isinstance(value, dict):
            out.update(numbers(value, f"{name}."))
    return out


def spread(values: list[float]) -> dict:
    """median, lowest, highest and spread (highest - lowest) of `values`."""
    lo, hi = min(values), max(values)
    return {"median": round(statistics.median(values), 4), "min": round(lo, 4), "max": round(hi, 4),
            "spread": round(hi - lo, 4), "runs": len(values)}


def summarize(results: list[Result]) -> dict:
    """The repeat's report: each run's verdict, how many reproduced, each figure's spread."""
    per_key: dict[str, list[float]] = {}
    for r in results:
        for key, value in numbers(r.figures).items():
            per_key.setdefault(key, []).append(value)
    reproduced = sum(1 for r in results if r.verdict == REPRODUCED)
    first = results[0]
    return {"scenario": first.scenario, "claim": first.claim, "runs": len(results),
            "reproduced": reproduced, "verdicts": [r.verdict for r in results],
            "summary": f"reproduced in {reproduced} of {len(results)}",
            "figures": {key: spread(values) for key, values in per_key.items()}}


def repeat(scenario, n: int, out: Path, on_run=None, steps=None,
           attempt=None) -> tuple[dict, list[Result]]:
    """Run `scenario` (configured) `n` times, each run's files as NAME.runK.json/png; the summary
    (also NAME.repeat.json, with every run) and the results. `on_run(k, result)` after each;
    `steps` (a progress.Steps) shows "k of N" with an ETA; `attempt(execute)` runs each
    (e.g. again while invalid, testbed/cli/attempts.py)."""
    results, steps = [], steps or progress.Steps(f"{scenario.name} run", n)
    for k in range(1, n + 1):
        with steps.step(f"{scenario.name}.run{k}"):
            def execute(k=k):
                return scenario.execute(out, quick=scenario.quick, stem=f"{scenario.name}.run{k}")
            result = attempt(execute) if attempt else execute()
        results.append(result)
        if on_run:
            on_run(k, result)
    summary = summarize(results)
    path = files.write_json(out, f"{scenario.name}.repeat.json",
                            {**summary, "results": [asdict(r) for r in results]}, indent=2)
    summary["file"] = str(path)
    return summary, results
