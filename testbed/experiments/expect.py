"""Expect clauses: a measure and a bound that turn an experiment's figures into a verdict (pure).

    [[expect]]
    measure = "loss"         # loss | throughput | rtt | failover_gap | busbw
    of = "p0s0h0"            # loss, throughput: an item of [measure] throughput (default: its first)
    phase = "fault 1"        # throughput, rtt: before (default), fault N or after; loss: fault N
    from = "p0s0h0-n0"       # rtt, failover_gap: the probe's two NICs (probed even if [measure]
    to = "p0s0h1-n0"         #   does not list them)
    traffic = 2              # busbw: the [[traffic]] item (a collective), counted from 1
    min = 0.1                # the bound: min, max or both (inclusive)
    max = 0.25

Units: loss is a fraction of the `before` rate, throughput and busbw Mbit/s, rtt and failover_gap
ms. "fault N" is the N-th fault in time. Every clause holds: `reproduced`; one does not, or its
figure was not measured: `not reproduced` (an experiment without clauses is `measured`).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

MEASURES = {"loss": "", "throughput": " Mbit/s", "rtt": " ms", "failover_gap": " ms", "busbw": " Mbit/s"}
EXPECT_KEYS = ("measure", "of", "phase", "from", "to", "traffic", "min", "max")
USES = {"loss": ("of", "phase"), "throughput": ("of", "phase"), "rtt": ("from", "to", "phase"),
        "failover_gap": ("from", "to"), "busbw": ("traffic",)}
PHASE = re.compile(r"^(before|after|fault ([1-9][0-9]*))$")
BOUND = (-1e12, 1e12)
# What a bound may be, by measure: no figure here is negative (a loss bound below 0 would ask for
# the rate to rise, which a fault cannot promise), and a loss is at most all of the `before` rate.
LIMITS = {"loss": (0.0, 1.0, "a loss is a fraction of the before rate, from 0 to 1"),
          "throughput": (0.0, BOUND[1], "a throughput cannot be negative"),
          "rtt": (0.0, BOUND[1], "an RTT cannot be negative"),
          "failover_gap": (0.0, BOUND[1], "a failover gap cannot be negative"),
          "busbw": (0.0, BOUND[1], "a bus bandwidth cannot be negative")}


@dataclass(frozen=True)
class Expect:
    measure: str
    where: str                       # "[[expect]] 1", for messages
    of: str = ""
    phase: str = ""
    pair: tuple[str, str] = ("", "")
    traffic: int = 0
    low: float | None = None
    high: float | None = None

    @property
    def label(self) -> str:
        subject = {"loss": self.of, "throughput": self.of, "busbw": f"[[traffic]] {self.traffic}"}.get(
            self.measure, " -> ".join(self.pair))
        phase = f" {self.phase}" if self.phase else ""
        bounds = " and ".join(b for b in (f">= {self.low:g}" if self.low is not None else "",
                                           f"<= {self.high:g}" if self.high is not None else "") if b)
        return f"{self.measure} {subject}{phase} {bounds}{MEASURES[self.measure]}"


def read(r, spec_parts: dict) -> Expect:
    """One [[expect]] table (Reader `r`), checked against the file's other tables: `spec_parts`
    holds fabric, throughput (watched items), traffic and faults."""
    measure = r.get("measure", str, required=True, choices=list(MEASURES))
    for key in r.data:
        if key not in ("measure", "min", "max", *USES[measure]):
            r.fail(key,
                   f"not a key of a {measure} expectation; it takes {', '.join(USES[measure])}, min, max")
    low, high = r.get("min", float, None, bounds=BOUND), r.get("max", float, None, bounds=BOUND)
    if low is None and high is None:
        r.fail(None, "a bound is required: min, max or both")
    floor, ceiling, why = LIMITS[measure]
    for key, value in (("min", low), ("max", high)):
        if value is not None and not floor <= value <= ceiling:
            r.fail(key, f"{value:g}: {why}")
    if low is not None and high is not None and low > high:
        r.fail("max", f"{high:g} is below min={low:g}")
    fields = {"measure": measure, "where": r.where, "low": low, "high": high}
    if measure in ("loss", "throughput"):
        fields.update(of=read_of(r, spec_parts["throughput"]),
                      phase=read_phase(r, measure, spec_parts["faults"]))
    elif measure == "busbw":
        fields["traffic"] = read_traffic(r, spec_parts["traffic"])
    else:
        fields["pair"] = read_pair(r, spec_parts["fabric"])
        if measure == "rtt":
            fields["phase"] = read_phase(r, measure, spec_parts["faults"])
    return Expect(**fields)


def read_of(r, watched: tuple[str, ...]) -> str:
    if not watched:
        r.fail(None, "nothing is watched: list hosts, NICs or links under [measure] throughput")
    of = r.get("of", str, watched[0])
    if of not in watched:
        r.fail("of", f"{of!r} is not under [measure] throughput ({', '.join(watched)})")
    return of


def read_phase(r, measure: str, faults) -> str:
    phase = r.get("phase", str, "fault 1" if measure == "loss" else "before")
    match = PHASE.match(phase)
    if not match:
        r.fail("phase", f"{phase!r}: before, after or fault N")
    if measure == "loss" and not match.group(2):
        r.fail("phase", f"{phase!r}: a loss is measured during a fault (fault N)")
    if (match.group(2) and int(match.group(2)) > len(faults)) or (phase == "after" and not faults):
        r.fail("phase", f"{phase!r}: the file has {len(faults)} [[fault]] table(s)")
    return phase


def read_traffic(r, traffic) -> int:
    k = r.get("traffic", int, required=True, bounds=(1, max(len(traffic), 1)))
    if not traffic[k - 1].busbw:
        r.fail("traffic", f"[[traffic]] {k} is {traffic[k - 1].kind}: busbw is a collective's")
    return k


def read_pair(r, fab) -> tuple[str, str]:
    nics = {n.name: n for n in fab.nics()}
    pair = (r.get("from", str, required=True), r.get("to", str, required=True))
    for key, name in zip(("from", "to"), pair):
        if name not in nics:
            r.fail(key, f"no NIC {name!r} in this {fab.family} fabric (HOST-nI)")
    if nics[pair[0]].host == nics[pair[1]].host:
        r.fail("to", "a probe crosses the fabric: two NICs of different hosts")
    return pair


# ---- the verdict ----

def phase_key(phase: str, names) -> str | None:
    """The figures' name of a phase: "fault 2" is "fault 2 (link-down ...)"."""
    return next((n for n in names if n == phase or n.startswith(phase + " (")), None)


def value_of(e: Expect, figures: dict) -> float | None:
    """The figure a clause bounds, from the run's figures (None: not measured)."""
    if e.measure in ("loss", "throughput"):
        item = figures["throughput"].get(e.of, {})
        table = item.get("losses" if e.measure == "loss" else "phases_mbps", {})
        return table.get(phase_key(e.phase, table))
    if e.measure == "busbw":
        where = f"[[traffic]] {e.traffic}"
        return next((t.get("busbw_mbit") for t in figures["traffic"] if t.get("where") == where), None)
    probe = figures.get(e.measure, {}).get(" -> ".join(e.pair), {})
    if e.measure == "failover_gap":
        return probe.get("longest_gap_ms")
    table = probe.get("phases_ms", {})
    return table.get(phase_key(e.phase, table))


def held(e: Expect, value) -> bool:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return False
    return (e.low is None or value >= e.low) and (e.high is None or value <= e.high)


def judge(expects, figures: dict) -> list[dict]:
    """Each clause with its measured value and whether it held."""
    out = []
    for e in expects:
        value = value_of(e, figures)
        out.append({"expect": e.label, "where": e.where, "value": value, "held": held(e, value)})
    return out
