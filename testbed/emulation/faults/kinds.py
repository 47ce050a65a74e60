"""What a fault kind is: one object declaring its arguments (names, types, bounds, help) and how
to inject it (the list of them: testbed/emulation/faults/registry.py). Both the CLI's `fault`
command (testbed/cli/shell_fabric.py) and the experiment files' [[fault]] tables
(testbed/experiments/check.py) are read from that one declaration, with the same checks and
the same messages.

    class Blink(FaultKind):
        name, help = "blink", "a link down for a moment"
        args = (Arg("port", PORT, "either interface of the cable", positional=True),)
        def inject(self, faults, port):
            return faults.link_down(faults.link(port))      # a Handle: repair() undoes it
    register(Blink())                                       # testbed.emulation.faults.registry

`register` checks a kind before it joins (a malformed one is refused with one ParamError line), so
that a kind written by a user (a later `--custom FILE.py`) gets the same treatment as these.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from testbed.core.errors import ParamError

if TYPE_CHECKING:
    from testbed.emulation.faults.inject import Faults, Handle

PORT, SWITCH = "port", "switch"   # an Arg's type: a name of the fabric (a string the model checks)
REQUIRED = object()
SHELL_WORDS = ("repair", "list")  # the `fault` command's own words, no kind's name
FILE_KEYS = ("kind", "at", "for")  # an experiment file's keys of every [[fault]], no argument's name
NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


class ArgProblem(ParamError):
    """A fault argument refused: `key` (None: the table or command as a whole) and the problem."""

    def __init__(self, key: str | None, problem: str):
        super().__init__(f"{key}: {problem}" if key else problem)
        self.key, self.problem = key, problem


@dataclass(frozen=True)
class Arg:
    """One argument of a fault kind: a TOML key of its [[fault]] table, and in the shell a
    positional word (`positional`) or `--name VALUE`."""
    name: str
    type: object                     # int, float, str, PORT or SWITCH
    help: str
    default: object = REQUIRED
    bounds: tuple | None = None      # (lowest, highest), both allowed
    choices: tuple | None = None
    positional: bool = False

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def value_type(self) -> type:
        return str if self.type in (PORT, SWITCH) else self.type

    def from_text(self, text: str):
        """A word typed at the shell, as the TOML reader would have it."""
        kind = self.value_type
        if kind is str:
            return text
        try:
            return kind(text)
        except ValueError:
            raise ArgProblem(self.name, f"expected {kind.__name__}, got {text!r}") from None

    def check(self, value, fabric):
        """`value`, checked (its type, choices, bounds, and the fabric's names); ArgProblem else."""
        kind = self.value_type
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ArgProblem(self.name, f"expected {kind.__name__}, got {value!r}")
        if self.choices is not None and value not in self.choices:
            raise ArgProblem(self.name, f"{value!r}: choose from {', '.join(map(str, self.choices))}")
        if self.bounds is not None and not (math.isfinite(value)
                                            and self.bounds[0] <= value <= self.bounds[1]):
            raise ArgProblem(self.name, f"{value}: must be between {self.bounds[0]} and {self.bounds[1]}")
        if self.type == PORT and not any(value in (l.a_intf, l.b_intf) for l in fabric.links):
            raise ArgProblem(self.name, f"no port {value!r} in this {fabric.family} fabric "
                                        "(a host port such as HOST-n0p0, or SWITCH-ethN)")
        if self.type == SWITCH and value not in fabric.switches:
            raise ArgProblem(self.name, f"no switch {value!r} in this {fabric.family} fabric")
        return value


class FaultKind:
    """A kind of fault. A subclass sets `name`, `help`, `args` and writes `inject`; the rest has
    defaults. `inject(faults, **args)` puts the fault in place and returns its Handle."""
    name: str = ""
    help: str = ""
    args: tuple[Arg, ...] = ()
    repair_word: str | None = None    # the shell's word that repairs it early (`fault link-up PORT`)

    def inject(self, faults: Faults, **args) -> Handle:
        raise NotImplementedError

    def undo(self, faults: Faults, **args) -> None:
        """What `fault REPAIR_WORD ARGS` does: repair the faults of this kind on those args."""
        raise NotImplementedError

    def rules(self, args: dict) -> None:
        """Checks across arguments (ArgProblem naming the key); the arguments are each valid."""

    def lasts(self, args: dict) -> float | None:
        """How long the fault lasts by itself (a flap train); None: until repaired (an experiment
        file's `for` says when)."""
        return None

    def windows(self, args: dict, at: float, end: float) -> list[tuple[float, float]]:
        """When the fault is in place, for plots: [at, end] unless it comes and goes."""
        return [(at, end)]

    def already(self, faults: Faults, **args) -> str | None:
        """Why injecting it now would change nothing (the shell says so instead), else None."""
        return None

    def target(self, args: dict) -> str:
        """What it hits, for labels: its first positional argument."""
        return str(next((args[a.name] for a in self.args if a.positional), ""))

    def read(self, given: dict, fabric) -> dict:
        """Every argument of the kind from `given` (TOML values, or shell words through
        Arg.from_text), checked against `fabric`, with defaults filled; ArgProblem else."""
        names = [a.name for a in self.args]
        for key in given:
            if key not in names:
                raise ArgProblem(key, f"not a key of a {self.name} fault; "
                                      f"it takes {', '.join(names) or 'nothing'}")
        out = {}
        for a in self.args:
            if a.name in given:
                out[a.name] = a.check(given[a.name], fabric)
            elif a.required:
                raise ArgProblem(None, f"{a.name} is required")
            else:
                out[a.name] = a.default
        self.rules(out)
        return out


class Registry:
    """The fault kinds, in the order they were registered. With `entry_points`, the installed
    packages' `hpn_testbed.fault_kinds` entry points join at the first read (not at register:
    the built-in kinds come first)."""

    def __init__(self, entry_points: bool = False):
        self.kinds: dict[str, FaultKind] = {}
        self.entry_points = entry_points

    def _read(self) -> dict[str, FaultKind]:
        if self.entry_points:
            from testbed.core import entrypoints
            entrypoints.load("fault_kinds", self.register,
                             lambda k: self.kinds.get(getattr(k, "name", None)) is k)
        return self.kinds

    def __iter__(self):
        return iter(self._read().values())

    def names(self) -> tuple[str, ...]:
        return tuple(self._read())

    def get(self, name: str) -> FaultKind:
        if name not in self._read():
            raise ParamError(f"no fault kind {name!r}; known: {', '.join(self.kinds)}")
        return self.kinds[name]

    def by_repair_word(self, word: str) -> FaultKind | None:
        return next((k for k in self if k.repair_word == word), None)

    def register(self, kind: FaultKind) -> FaultKind:
        """Add `kind` (also returned, so it can decorate an instance's creation) once checked."""
        problem = malformed(kind, self)
        if problem:
            raise ParamError(f"fault kind {getattr(kind, 'name', kind)!r} refused: {problem}")
        self.kinds[kind.name] = kind
        return kind

    def unregister(self, name: str) -> None:
        self.kinds.pop(name, None)


def malformed(kind, registry: Registry) -> str | None:
    """What is wrong with a would-be fault kind, or None."""
    if not isinstance(kind, FaultKind):
        return "not a FaultKind"
    kinds = registry.kinds.values()          # (not a read: no entry points loaded from here)
    taken = {*registry.kinds, *SHELL_WORDS, *(k.repair_word for k in kinds if k.repair_word)}
    for word in filter(None, (kind.name, kind.repair_word)):
        if not NAME.match(word):
            return f"{word!r} is not a lower-case word (a-z, 0-9, hyphens)"
        if word in taken:
            return f"{word!r} is taken"
    if not kind.name:
        return "no name"
    if not kind.help or "\n" in kind.help:
        return "help must be one line"
    if type(kind).inject is FaultKind.inject:
        return "no inject method"
    if kind.repair_word and type(kind).undo is FaultKind.undo:
        return f"repair word {kind.repair_word!r} but no undo method"
    return args_problem(kind.args)


def args_problem(args) -> str | None:
    if not isinstance(args, tuple) or not all(isinstance(a, Arg) for a in args):
        return "args must be a tuple of Arg"
    names = [a.name for a in args]
    for a in args:
        if not re.match(r"^[a-z][a-z0-9_]*$", a.name) or a.name in FILE_KEYS or names.count(a.name) > 1:
            return f"argument name {a.name!r}: a lower-case identifier, once, not {', '.join(FILE_KEYS)}"
        if a.type not in (int, float, str, PORT, SWITCH):
            return f"argument {a.name}: type must be int, float, str, PORT or SWITCH"
        if a.bounds is not None and (a.value_type not in (int, float) or len(a.bounds) != 2):
            return f"argument {a.name}: bounds are (lowest, highest) of a number"
        if not a.help:
            return f"argument {a.name}: no help"
        if not a.required and a.type not in (PORT, SWITCH):    # a fabric's names: no default
            try:
                a.check(a.default, None)
            except ParamError as e:
                return f"argument {a.name}: its default {a.default!r} is refused ({e})"
    return None
