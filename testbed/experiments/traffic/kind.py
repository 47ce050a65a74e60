"""What a traffic kind is: one frozen dataclass declaring its keys (type, default, bounds or
choices, help), its checks, and how it runs (the list of them: testbed/experiments/traffic/
__init__.py). The experiment files' [[traffic]] tables (testbed/experiments/check.py), their JSON
Schema (docs/experiment.schema.json), the table of docs/experiments.md and the run
(testbed/experiments/runner.py) are all read from that one declaration.

    @dataclass(frozen=True, kw_only=True)
    class Burst(Traffic):
        kind, help = "burst", "one iperf3 flow between two NICs for a second"
        src: str = key(str, "the sending NIC (HOST-nI)", toml="from")
        dst: str = key(str, "the receiving NIC", toml="to")

        def check(self, fab, fail):              # fail(key, problem) raises, one line
            ...
        def runner(self, emu, n):                # a Run: prepare, begin at `start`, wait
            ...
    register(Burst)                              # testbed.experiments.traffic

`register` checks a kind before it joins (a malformed one is refused with one ParamError line),
so that a kind of a user's own (`custom = "file.py"`) gets the same treatment as the built-in ones.
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import MISSING, dataclass, field
from typing import ClassVar

from testbed.core.errors import ParamError
from testbed.experiments.spec import SECONDS

NAMES, GROUPS = "names", "groups"    # a Key's type: a list of names; a list of lists of names
REQUIRED = MISSING
NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Key:
    """One key of a kind's [[traffic]] table: the TOML key `name` of a dataclass field."""
    name: str
    type: object                     # int, float, str, NAMES or GROUPS
    help: str
    default: object = REQUIRED       # None: optional, no value (rate_mbit)
    bounds: tuple | None = None      # (lowest, highest), both allowed
    choices: tuple | None = None

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def read(self, r):
        """Its value in the table of Reader `r` (ParamError naming the key, else)."""
        if self.required and self.name not in r.data:
            r.fail(None, f"{self.name} is required: {self.help}")
        if self.type not in (NAMES, GROUPS):
            default = None if self.required else self.default
            return r.get(self.name, self.type, default, bounds=self.bounds, choices=self.choices)
        value = r.get(self.name, list, [] if self.required else list(self.default))
        if self.type == NAMES and all(isinstance(v, str) for v in value):
            return tuple(value)
        if self.type == GROUPS and all(isinstance(g, list) and all(isinstance(v, str) for v in g)
                                       for g in value):
            return tuple(tuple(g) for g in value)
        r.fail(self.name, "expected a list of names" if self.type == NAMES else
               "expected a list of lists of names")

    def schema(self) -> dict:
        """Its JSON Schema (docs/experiment.schema.json)."""
        if self.type == NAMES:
            return {"$ref": "#/$defs/names"}
        if self.type == GROUPS:
            return {"type": "array", "items": {"$ref": "#/$defs/names"}}
        if self.choices is not None:
            return {"enum": list(self.choices)}
        if self.type is float and self.bounds == SECONDS:
            return {"$ref": "#/$defs/seconds"}
        out = {"type": {int: "integer", float: "number"}.get(self.type, "string")}
        if self.bounds is not None:
            out.update(minimum=self.bounds[0], maximum=self.bounds[1])
        return out

    def doc(self) -> str:
        """`name` (required, or its default; its range or choices): its help, for the docs."""
        said = ["required"] if self.required else [] if self.default in (None, ()) else [
            f"default {shown(self.default)}"]
        if self.bounds is not None:
            said.append(f"{shown(self.bounds[0])} to {shown(self.bounds[1])}")
        if self.choices is not None:
            said.append(" or ".join(map(str, self.choices)))
        return f"`{self.name}`{' (' + ', '.join(said) + ')' if said else ''}: {self.help}"


def shown(value) -> str:
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def key(type, help: str, default=REQUIRED, *, bounds=None, choices=None, toml: str | None = None):
    """A dataclass field that is a key of the kind's table (`toml`: its TOML name when that is
    not the field's, e.g. `from`)."""
    spec = Key(toml or "", type, help, default, bounds, choices)
    return field(default=default, metadata={"key": spec})


@dataclass(frozen=True, kw_only=True)
class Traffic:
    """A [[traffic]] table, read: a subclass per kind sets `kind` and `help`, declares its keys
    with `key()`, and writes `runner` (and `check`, `length`, `watched` where it has them)."""
    kind: ClassVar[str] = ""
    help: ClassVar[str] = ""
    busbw: ClassVar[bool] = False    # whether its results give a bus bandwidth ([[expect]] busbw)
    where: str = ""                  # "[[traffic]] 1", for messages (no key)
    start: float = key(float, "s on the experiment's clock when it starts", 0.0, bounds=SECONDS)

    @classmethod
    def keys(cls) -> dict[str, tuple[str, Key]]:
        """TOML key -> (field name, Key), in declaration order."""
        out = {}
        for f in dataclasses.fields(cls):
            if "key" in f.metadata:
                k = f.metadata["key"]
                out[k.name or f.name] = (f.name, k if k.name else dataclasses.replace(k, name=f.name))
        return out

    @classmethod
    def read(cls, r, fab) -> Traffic:
        """The kind's table in Reader `r`, each key checked, then the kind's own checks."""
        keys = cls.keys()
        known = ["kind", *keys]
        for name in r.data:
            if name not in known:
                r.fail(name, f"not a key of {cls.kind} traffic; known: {', '.join(known)}")
        values = {attr: k.read(r) for attr, k in keys.values()}
        traffic = cls(where=r.where, **values)
        traffic.check(fab, r.fail)
        return traffic

    @classmethod
    def schema(cls) -> dict:
        """The JSON Schema of its table, once `kind` says it is this kind."""
        keys = {name: k for name, (_, k) in cls.keys().items()}
        return {"required": [n for n, k in keys.items() if k.required], "additionalProperties": False,
                "properties": {"kind": True, **{n: k.schema() for n, k in keys.items()}},
                **cls.schema_rules()}

    @classmethod
    def schema_rules(cls) -> dict:
        """Rules across keys that a schema can say (iperf3: udp needs rate_mbit)."""
        return {}

    @classmethod
    def doc(cls) -> str:
        """Its row of the [[traffic]] table in docs/experiments.md (`start`, every kind's, is
        said once there)."""
        keys = [k.doc() for name, (_, k) in cls.keys().items() if name != "start"]   # every kind's
        return f'| `[[traffic]]` kind = "{cls.kind}" | {cls.help}: {"; ".join(keys)} |'

    def check(self, fab, fail) -> None:
        """Checks across keys and against the fabric model; `fail(key, problem)` raises."""

    @property
    def length(self) -> float | None:
        """How long it runs, when that is known in advance (iperf3's seconds); None: until its
        work is done (a collective's bytes delivered)."""
        return None

    @property
    def timed(self) -> bool:
        return self.length is not None

    @property
    def end(self) -> float | None:
        return None if self.length is None else self.start + self.length

    def watched(self) -> tuple[str, ...]:
        """What [measure] throughput watches when the file does not say (iperf3: its sender)."""
        return ()

    def runner(self, emu, n: int) -> Run:
        """The item on a running emulation, `n` its index in the file (its ports derive from it)."""
        raise NotImplementedError


class Run:
    """One [[traffic]] item on a running emulation: `prepare` before the experiment's clock
    starts (servers), `begin` at its `start`, `wait` for its results (dicts for the run's JSON,
    each with the item's `where`)."""

    def prepare(self) -> None:
        pass

    def begin(self) -> None:
        raise NotImplementedError

    def wait(self) -> list[dict]:
        raise NotImplementedError


class Registry:
    """The traffic kinds, in the order they were registered."""

    def __init__(self):
        self.kinds: dict[str, type[Traffic]] = {}

    def __iter__(self):
        return iter(self.kinds.values())

    def names(self) -> tuple[str, ...]:
        return tuple(self.kinds)

    def get(self, name: str) -> type[Traffic]:
        if name not in self.kinds:
            raise ParamError(f"no traffic kind {name!r}; known: {', '.join(self.kinds)}")
        return self.kinds[name]

    def register(self, kind: type[Traffic]) -> type[Traffic]:
        """Add `kind` (also returned: it can decorate the class) once checked."""
        problem = malformed(kind, self)
        if problem:
            raise ParamError(f"traffic kind {getattr(kind, 'kind', kind)!r} refused: {problem}")
        self.kinds[kind.kind] = kind
        return kind

    def unregister(self, name: str) -> None:
        self.kinds.pop(name, None)


def malformed(kind, registry: Registry) -> str | None:
    """What is wrong with a would-be traffic kind, or None."""
    if not (isinstance(kind, type) and issubclass(kind, Traffic) and "__dataclass_fields__" in vars(kind)
            and kind.__dataclass_params__.frozen):     # (a subclass not decorated itself is none)
        return "not a frozen dataclass subclass of Traffic"
    if not kind.kind or not NAME.match(kind.kind):
        return f"{kind.kind!r} is not a lower-case word (a-z, 0-9, hyphens)"
    if kind.kind in registry.kinds:
        return f"{kind.kind!r} is taken"
    if not kind.help or "\n" in kind.help:
        return "help must be one line"
    if kind.runner is Traffic.runner:
        return "no runner method"
    unkeyed = [f.name for f in dataclasses.fields(kind) if f.name != "where" and "key" not in f.metadata]
    if unkeyed:
        return f"field {unkeyed[0]} is not declared with key()"
    for name, (_, k) in kind.keys().items():
        problem = key_problem(name, k)
        if problem:
            return f"key {name}: {problem}"
    return None


def key_problem(name: str, k: Key) -> str | None:
    if not re.match(r"^[a-z][a-z0-9_]*$", name) or name == "kind":
        return "a lower-case identifier, not kind"
    if k.type not in (int, float, str, NAMES, GROUPS):
        return "type must be int, float, str, NAMES or GROUPS"
    if k.bounds is not None and (k.type not in (int, float) or len(k.bounds) != 2):
        return "bounds are (lowest, highest) of a number"
    if not k.help:
        return "no help"
    if k.bounds is not None and k.default not in (REQUIRED, None) and not (
            math.isfinite(k.default) and k.bounds[0] <= k.default <= k.bounds[1]):
        return f"its default {k.default!r} is outside {k.bounds}"
    return None
