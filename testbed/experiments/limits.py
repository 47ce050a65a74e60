"""What an experiment file may ask beyond its types and names (check.py reads those): no text
that reads one way and shows another, nothing listed twice, no two copies of one fault at
once, and probes this machine can run. Checked once the file is read (`check(spec, top)`,
pure but for the CPU count); each problem is one line naming the file, line, table and key.
"""
from __future__ import annotations

import os
import unicodedata

from testbed.experiments.spec import Reader, Spec

MAX_RTT_PAIRS = 64            # RTT probes: a ping every 0.1 s each
GAP_PAIRS_PER_CORE = 4        # failover-gap probes: a ping every 1 ms each, a core's share apiece
# bidirectional controls: text shown in another order than it is read (CVE-2021-42574)
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def check(spec: Spec, top: Reader) -> None:
    """ParamError (one line) for the first limit `spec` (read from `top`) goes past."""
    hidden_text(top)
    measure = Reader(spec.path, top.locator, "measure", 1, {}, None)
    for key, items in (("throughput", spec.throughput), ("queues", spec.queues)):
        twice = next((item for k, item in enumerate(items) if item in items[:k]), None)
        if twice is not None:
            measure.fail(key, f"{twice!r} is listed twice")
    cores = len(os.sched_getaffinity(0))
    for key, pairs, cap, per in (("rtt", spec.rtt, MAX_RTT_PAIRS, ""),
                                 ("failover_gap", spec.gaps, GAP_PAIRS_PER_CORE * cores,
                                  f" ({GAP_PAIRS_PER_CORE} per core, {cores} cores here)")):
        if len(pairs) > cap:
            measure.fail(key, f"{len(pairs):,} NIC pairs (with those the expect clauses probe): "
                              f"at most {cap}{per}")
    overlapping_faults(spec, top)


def hidden_text(top: Reader) -> None:
    """No bidirectional control (U+202E...) or other invisible format character in any key or
    string of the file: a name that shows as one thing and is another."""
    def walk(value, key):
        for text in ([value] if isinstance(value, str) else
                     [*value.keys(), *value.values()] if isinstance(value, dict) else
                     value if isinstance(value, list) else []):
            if not isinstance(text, str):
                walk(text, key)
                continue
            odd = next((c for c in text if c in BIDI_CONTROLS or unicodedata.category(c) == "Cf"), None)
            if odd is not None:
                top.fail(key, f"holds U+{ord(odd):04X} ({unicodedata.name(odd, 'a format character')}): "
                              "text shown in another order than it is read")
    for key, value in top.data.items():
        walk([key, value], key)


def overlapping_faults(spec: Spec, top: Reader) -> None:
    """The same fault (kind and target) twice at once: the second would change nothing, and the
    first one's repair would end both."""
    for j, b in enumerate(spec.faults):
        for i, a in enumerate(spec.faults[:j], 1):
            if (a.kind, a.target) == (b.kind, b.target) and a.at < b.end and b.at < a.end:
                Reader(spec.path, top.locator, "fault", j + 1, {}, None).fail(
                    "at", f"{b.label} from {b.at:g} s overlaps [[fault]] {i}, the same fault "
                          f"({a.at:g}-{a.end:g} s): one at a time")
