"""An experiment file (TOML) read and checked, pure: every table, key, type and range, and every
host, NIC, port and switch it names against the fabric model, before anything is built.

A problem is one line, `FILE:LINE: [[fault]] 1: port: no port 'x' in this hpn fabric` (ParamError,
exit status 2): the line from tomllib's own message, or the line where the key (else its table)
is written.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from testbed.core import files
from testbed.core.compat import tomllib
from testbed.core.errors import ParamError

ROUTING_KEYS = ("ecmp", "policy", "core", "detector", "matrix")
TOP_KEYS = ("name", "description", "custom", "fabric", "routing", "traffic", "job", "fault", "measure",
            "expect")
MEASURE_KEYS = ("throughput", "queues", "rtt", "failover_gap", "warm", "settle", "interval")
SECONDS = (0.0, 3600.0)               # a time on the experiment's clock


@dataclass(frozen=True)
class Fault:
    """A [[fault]] table: a registered fault kind (testbed/emulation/faults/registry.py) with its
    arguments, injected `at` s after the traffic starts and repaired `seconds` (`for`) later, or
    ending by itself when the kind times itself (a flap train)."""
    kind: str
    at: float
    where: str
    args: tuple[tuple[str, object], ...] = ()   # (name, value) of each of the kind's arguments
    seconds: float = 0.0               # `for`; a kind that times itself sets its own length

    @property
    def fault_kind(self):
        from testbed.emulation.faults.registry import get
        return get(self.kind)

    @property
    def arguments(self) -> dict:
        return dict(self.args)

    @property
    def self_timed(self) -> bool:
        """Whether the fault ends by itself (a flap train): its phase counts from its start."""
        return self.fault_kind.lasts(self.arguments) is not None

    @property
    def end(self) -> float:
        lasts = self.fault_kind.lasts(self.arguments)
        return self.at + (self.seconds if lasts is None else lasts)

    @property
    def windows(self) -> list[tuple[float, float]]:
        """When the fault is in place: a flap train's down windows, else [at, end]."""
        return self.fault_kind.windows(self.arguments, self.at, self.end)

    @property
    def target(self) -> str:
        return self.fault_kind.target(self.arguments)

    @property
    def label(self) -> str:
        return f"{self.kind} {self.target}"


@dataclass(frozen=True)
class Spec:
    path: str
    name: str
    description: str
    family: str
    settings: dict
    routing: dict
    detector: bool
    traffic: tuple                     # of Traffic, each of its kind (testbed/experiments/traffic/)
    faults: tuple[Fault, ...]
    throughput: tuple[str, ...] = ()
    queues: tuple[str, ...] = ()
    rtt: tuple[tuple[str, str], ...] = ()          # NIC pairs pinged every 0.1 s
    gaps: tuple[tuple[str, str], ...] = ()         # NIC pairs probed every 1 ms (failover gap)
    expects: tuple = ()                            # expect.Expect clauses: the verdict
    warm: float = 1.5                  # s after the first traffic starts before the first phase counts
    settle: float = 0.5                # s after a fault starts or ends before its phase counts
    interval: float = 0.1              # s between counter samples
    jobs: tuple = ()                   # of workload.jobs.Job: [[job]] tables, begun at t = 0
    fabric: object = field(default=None, compare=False, repr=False)

    @property
    def first_start(self) -> float:
        return min((t.start for t in self.traffic), default=0.0)

    @property
    def planned(self) -> float:
        """How long the timed parts last (traffic whose length is known, such as iperf3 flows, and
        faults): how long probes run, >= 1 s."""
        ends = [t.end for t in self.traffic if t.timed] + [f.end for f in self.faults]
        return max([1.0, *ends])


class Locator:
    """Where tables and keys are written in a TOML text: line numbers for messages."""
    HEADER = re.compile(r"^\s*(\[\[?)\s*([\w.-]+)\s*\]\]?")
    KEY = re.compile(r"^\s*\"?([\w-]+)\"?\s*=")

    def __init__(self, text: str):
        self.tables: dict[tuple[str, int], int] = {}
        self.keys: dict[tuple[str, int, str], int] = {}
        section, counts = ("", 0), {}
        for n, line in enumerate(text.splitlines(), 1):
            header = self.HEADER.match(line)
            if header:
                name = header.group(2)
                counts[name] = counts.get(name, 0) + 1 if header.group(1) == "[[" else 1
                section = (name, counts[name])
                self.tables[section] = n
                continue
            key = self.KEY.match(line)
            if key:
                self.keys.setdefault((*section, key.group(1)), n)

    def line(self, table: str, index: int = 1, key: str | None = None) -> int | None:
        return self.keys.get((table, index, key)) or self.tables.get((table, index))


class Reader:
    """Checks the values of one table, naming the file, line, table and key of a problem."""

    def __init__(self, path: str, locator: Locator, table: str, index: int, data: dict, allowed):
        self.path, self.locator, self.table, self.index, self.data = path, locator, table, index, data
        self.where = (f"[[{table}]] {index}" if table in ("traffic", "job", "fault", "expect")
                      else f"[{table}]" if table else "top level")
        if not isinstance(data, dict):
            self.fail(None, "expected a table")
        if allowed is not None:
            for key in data:
                if key not in allowed:
                    self.fail(key, f"unknown key; known: {', '.join(allowed)}")

    def fail(self, key: str | None, problem: str):
        line = self.locator.line(self.table, self.index, key)
        at = f"{self.path}:{line}" if line else self.path
        raise ParamError(f"{at}: {self.where}: {key + ': ' if key else ''}{problem}")

    def get(self, key: str, kind, default=None, required: bool = False, bounds=None, choices=None):
        if key not in self.data:
            if required:
                self.fail(None, f"{key} is required")
            return default
        value = self.data[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            self.fail(key, f"expected {getattr(kind, '__name__', kind)}, got {value!r}")
        if choices is not None and value not in choices:
            self.fail(key, f"{value!r}: choose from {', '.join(choices)}")
        if bounds is not None:
            lo, hi = bounds
            if not (math.isfinite(value) and lo <= value <= hi):
                self.fail(key, f"{value}: must be between {lo} and {hi}")
        return value

    def pairs(self, key: str) -> tuple[tuple[str, str], ...]:
        """A list of [SRC, DST] NIC pairs."""
        value = self.get(key, list, [])
        if not all(isinstance(p, list) and len(p) == 2 and all(isinstance(n, str) for n in p) for p in value):
            self.fail(key, "expected a list of [SRC, DST] NIC pairs")
        return tuple((a, b) for a, b in value)

    def names(self, key: str, default=()) -> tuple[str, ...]:
        value = self.get(key, list, list(default))
        if not all(isinstance(v, str) for v in value):
            self.fail(key, "expected a list of names")
        return tuple(value)


def parse(path: str) -> tuple[dict, Locator]:
    """The TOML of `path` and where its keys are; tomllib's errors keep their line."""
    text = files.read_text(path, "experiment file", files.EXPERIMENT_MAX)   # regular, bounded, UTF-8
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        match = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
        where = f"{match.group(1)}" if match else "?"
        raise ParamError(f"{path}:{where}: not valid TOML: {str(e).split(' (at line')[0]}") from None
    except (ValueError, RecursionError):      # tomllib's limits (digits, nesting): as one line
        files.parse_toml(text, path)
        raise
    return data, Locator(text)


def tables(top: Reader, key: str, required: bool = False) -> list:
    value = top.get(key, list, [])
    if not value and required:
        top.fail(None, f"at least one [[{key}]] is required")
    if not all(isinstance(v, dict) for v in value):
        top.fail(key, f"expected [[{key}]] tables")
    return value


def fault_schema() -> dict:
    """The JSON Schema of a [[fault]] table, from the fault registry: docs/experiment.schema.json
    holds this under $defs.fault (tests/unit/test_fault_registry.py keeps the two in step)."""
    from testbed.emulation.faults.registry import kinds
    seconds = {"type": "number", "minimum": 0.1, "maximum": 3600}
    cases = []
    for kind in kinds():
        props = {"kind": True, "at": True, **{a.name: arg_schema(a) for a in kind.args}}
        required = [a.name for a in kind.args if a.required]
        if kind.lasts({a.name: a.default for a in kind.args}) is None:
            props["for"], required = seconds, [*required, "for"]
        cases.append({"if": {"properties": {"kind": {"const": kind.name}}},
                      "then": {"required": required, "additionalProperties": False, "properties": props}})
    return {"type": "object", "required": ["kind", "at"],
            "properties": {"kind": {"enum": [k.name for k in kinds()]}, "at": {"$ref": "#/$defs/seconds"}},
            "allOf": cases}


def arg_schema(arg) -> dict:
    if arg.choices is not None:
        return {"enum": list(arg.choices)}
    out = {"type": {int: "integer", float: "number"}.get(arg.value_type, "string")}
    if arg.bounds is not None:
        out.update(minimum=arg.bounds[0], maximum=arg.bounds[1])
    return out
