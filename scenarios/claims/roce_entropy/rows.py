"""C14's rows: one QP count's (or one routing's) rounds summarized, and the checks that the
emulator, not the fabric, did not set what was measured. Pure."""
from __future__ import annotations

import statistics

from testbed.model import fluid

SENT = 0.95           # senders that kept below this share of their timetable: the emulator lagged
UPLINK = 0.05         # an uplink's utilization further than this from what its traced QPs allow
TRACED = 0.25         # measured completion further than this from the traced paths' prediction


def uplink_check(util: float, expected: float) -> tuple[float, float]:
    """(how far an uplink contradicts its traced QPs, the share of their offer it fell short by).

    Contradicting: traffic on an uplink no traced QP takes, or more than its QPs offer (or the
    line rate). Falling short is the userspace datapath's: while a port's queue overflows, some
    of what the switch's other ports receive is dropped too (seen on leaves with an overloaded
    uplink only; docs/claims.md, C14), which a lossless fabric would not do: reported, and an
    overloaded uplink's shortfall enters the completion (its measured rate)."""
    if expected >= 1 - fluid.EPS:
        return max(0.0, util - 1 - UPLINK / 2), max(0.0, 1 - util)
    if expected <= 0:
        return util, 0.0
    return max(0.0, util - expected), max(0.0, 1 - util / expected)


def spread_of(draw: dict) -> float:
    """The uplinks' spread in one draw: busiest share less least busy share, mean over leaves."""
    return statistics.fmean(max(s) - min(s) for s in draw["uplink_share"].values())


def summary(rounds: list[dict], ideal: float) -> dict:
    """One QP count's rounds and their means (what the judge compares)."""
    done = [r["completion_s"] for r in rounds if r["completion_s"] is not None]
    utils = [list(r["uplink_util"].values()) for r in rounds]
    checked = [uplink_check(u, r["uplink_expected"][i]) for r in rounds for i, u in r["uplink_util"].items()]
    completion = statistics.fmean(done) if len(done) == len(rounds) else None
    return {"rounds": rounds,
            "completion_s": round(completion, 4) if completion else None,
            "over_ideal": round(completion / ideal, 3) if completion and ideal else None,
            "traced_s": round(statistics.fmean(r["traced_s"] for r in rounds), 4),
            "busiest_util": round(statistics.fmean(max(u) for u in utils), 3),
            "least_util": round(statistics.fmean(min(u) for u in utils), 3),
            "spread": round(statistics.fmean(spread_of(r) for r in rounds), 3),
            "uplink_error": round(max(e for e, _ in checked), 3),
            "uplink_shortfall": round(max(s for _, s in checked), 3),
            "sent_fraction": min(r["sent_fraction"] for r in rounds),
            "cpu_busy": max(r["cpu_busy"] for r in rounds)}


def trusted(rows: dict, unit: str = " QP") -> str | None:
    """Why the emulator, not the fabric, may have set what was measured (None: it did not);
    `rows` by QP count (or by routing), `unit` what names a row in the reason."""
    for q, row in rows.items():
        if row["completion_s"] is None:
            return f"a full port delivered nothing ({q}{unit})"
        if row["sent_fraction"] < SENT:
            return f"the sender kept {row['sent_fraction']:.0%} of its timetable ({q}{unit})"
        if row["uplink_error"] > UPLINK:
            return (f"{q}{unit}: an uplink's load was {row['uplink_error']:.0%} of its line off what the "
                    "traced hashing puts on it")
        if abs(row["completion_s"] / row["traced_s"] - 1) > TRACED:
            return (f"{q}{unit}: the ring took {row['completion_s']} s where the fluid model of its "
                    f"traced paths says {row['traced_s']} s")
    return None
