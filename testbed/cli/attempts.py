"""Attempts: a scenario whose run was `invalid` because the machine, not the claim, failed (the
emulator could not get the CPU it needed) is run again, on a fresh bring-up, at most `retries`
more times; every attempt is kept in the result, and the verdict comes from a valid run only.

A run that lost a part of its fabric (a daemon died, the controller hung) is not retried: the
testbed says what it lost instead. The closing line and the exit status say what the verdicts
mean together (`closing`, `exit_status`), so that a busy machine is never read as a refuted claim.
"""
from __future__ import annotations

from collections import Counter

DEFAULT_RETRIES = 2
MAX_RETRIES = 10
QUIET_WAIT_S = 30.0        # how long a retry waits at most for the machine to calm down
QUIET_PRESSURE = 0.5       # /proc/pressure/cpu "some avg10" below which the machine is quiet enough

# Exit statuses of `run` (documented in `run --help` and the README)
EXIT_OK, EXIT_REFUTED, EXIT_USAGE, EXIT_INVALID = 0, 1, 2, 3
EPILOG = ("exit status: 0 every run reproduced its claim (or, for experiment files, was measured); "
          "1 a claim was not reproduced or a run failed (it lost a part of its fabric); 2 bad input, "
          "nothing was run; 3 no claim was refuted, but some runs were invalid (the machine was too "
          "busy for a verdict, even after --retries)")


def retryable(result) -> bool:
    """An invalid run that lost no part: the machine was short of CPU, a retry may judge it."""
    return result.verdict == "invalid" and "lost" not in result.figures


def cpu_pressure(path: str = "/proc/pressure/cpu") -> float | None:
    """The share of the last 10 s in which some task waited for a CPU (PSI), or None."""
    try:
        with open(path) as f:
            first = f.readline().split()
    except OSError:
        return None
    fields = dict(item.split("=", 1) for item in first[1:] if "=" in item)
    try:
        return float(fields["avg10"]) / 100
    except (KeyError, ValueError):
        return None


def wait_for_quiet(sleep, now, pressure=cpu_pressure, limit: float = QUIET_WAIT_S) -> float | None:
    """Wait (at most `limit` s) until the machine's CPU pressure falls below QUIET_PRESSURE; the
    last pressure read (None where the kernel has no PSI: then no wait)."""
    start = now()
    value = pressure()
    while value is not None and value >= QUIET_PRESSURE and now() - start < limit:
        sleep(1.0)
        value = pressure()
    return value


def until_valid(execute, retries: int, on_retry=None, before_retry=None):
    """`execute()` (one run, a Result) until it is not retryable or `retries` more runs were made.
    `on_retry(k, result)` is told of each invalid attempt before run k+1; `before_retry()` runs
    before each retry (e.g. wait_for_quiet). The last result, with every attempt listed in its
    figures ("attempts": verdict and headline of each)."""
    attempts = []
    while True:
        result = execute()
        attempts.append({"verdict": result.verdict, "headline": result.headline})
        if not retryable(result) or len(attempts) > retries:
            break
        if on_retry:
            on_retry(len(attempts), result)
        if before_retry:
            before_retry()
    if len(attempts) > 1:
        result.figures["attempts"] = attempts
    return result


def tally(results) -> Counter:
    return Counter(r.verdict for r in results)


def retried(results) -> int:
    return sum(1 for r in results if len(r.figures.get("attempts", [])) > 1)


def exit_status(results) -> int:
    """EXIT_OK if every run reproduced (or was measured), EXIT_REFUTED if any was not reproduced
    or failed (lost a part of its fabric), else EXIT_INVALID (only the machine stood between the
    runs and a verdict)."""
    verdicts = tally(results)
    bad = {v for v in verdicts if v not in ("reproduced", "measured", "invalid")}
    if bad or any("lost" in r.figures for r in results):
        return EXIT_REFUTED
    return EXIT_INVALID if verdicts["invalid"] else EXIT_OK


def closing(results) -> str:
    """One line that says what the verdicts mean together, e.g. "8 reproduced, 5 invalid (the
    machine was too busy for a verdict; 5 retried): no claim was refuted"."""
    counts = tally(results)
    parts = [f"{n} {verdict}" for verdict, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    line = ", ".join(parts)
    lost = sum(1 for r in results if r.verdict == "invalid" and "lost" in r.figures)
    busy = counts["invalid"] - lost
    why = []
    if busy:
        why.append(f"{busy} because the machine was too busy for a verdict")
    if lost:
        why.append(f"{lost} because the run lost a part of its fabric")
    if retried(results):
        why.append(f"{retried(results)} retried")
    if why:
        line += f" ({'; '.join(why)})"
    refuted = counts.total() - counts["reproduced"] - counts["measured"] - counts["invalid"]
    if refuted:
        return line + f": {refuted} not reproduced"
    if counts["invalid"]:
        return line + ": no claim was refuted; run the invalid ones again on a quieter machine " \
                      "(or with a lower --set scale)"
    return line
