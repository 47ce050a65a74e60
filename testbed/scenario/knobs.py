"""A scenario's parameters: its own knobs (durations, streams, sizes...) and the fabric's.

A scenario declares its knobs as a frozen dataclass subclassing Knobs: typed fields whose
defaults are the full run's, QUICK with the short (tour) version's values, BOUNDS with ranges
(the same (lowest, highest, why) triples as testbed/model/params.py) and HELP with a few words
each. `--set KEY=VALUE` items name either a knob or a parameter of the scenario's fabric family
(the names `topo show` uses); `split` tells them apart and refuses unknown keys, and keys the
scenario sets itself, in one line (ParamError: exit status 2) before anything is built.
"""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import ClassVar

from testbed.core.errors import ParamError
from testbed.model.params import _check_value, _coerce, _hints, _type_name


@dataclass(frozen=True)
class Knobs:
    """No knobs; subclass with fields."""
    QUICK: ClassVar[dict] = {}
    BOUNDS: ClassVar[dict] = {}
    HELP: ClassVar[dict] = {}

    def check(self) -> None:
        hints = _hints(type(self))
        for f in dataclasses.fields(self):
            value, hint = getattr(self, f.name), hints[f.name]
            if is_tuple(hint):
                if not isinstance(value, tuple) or not value:
                    raise ParamError(f"{f.name}={value!r}: expected a comma-separated list")
                for v in value:
                    _check_value(f.name, v, element(hint), self.BOUNDS.get(f.name))
            else:
                _check_value(f.name, value, hint, self.BOUNDS.get(f.name))
        self.rules()

    def rules(self) -> None:
        """Rules between knobs (ParamError); none here."""

    @classmethod
    def make(cls, settings: dict, quick: bool) -> Knobs:
        """The knobs: defaults (QUICK's in quick mode), then `settings` (strings are parsed)."""
        hints = _hints(cls)
        values = dict(cls.QUICK) if quick else {}
        for key, value in settings.items():
            values[key] = coerce(key, value, hints[key]) if isinstance(value, str) else value
        knobs = cls(**values)
        knobs.check()
        return knobs

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def describe(cls) -> list[dict]:
        """name, type, default, quick default and help of every knob (for --help and list
        --params): defaults as values (numbers as numbers, a list knob as a list), for JSON."""
        hints = _hints(cls)
        return [{"name": f.name, "type": type_name(hints[f.name]), "default": as_value(f.default),
                 "quick": as_value(cls.QUICK.get(f.name, f.default)), "help": cls.HELP.get(f.name, "")}
                for f in dataclasses.fields(cls)]


def is_tuple(hint) -> bool:
    return typing.get_origin(hint) is tuple


def element(hint):
    return typing.get_args(hint)[0]


def type_name(hint) -> str:
    return f"list of {element(hint).__name__}" if is_tuple(hint) else _type_name(hint)


def as_value(value):
    return list(value) if isinstance(value, tuple) else value


def shown(value) -> str:
    return ",".join(str(v) for v in value) if isinstance(value, tuple) else str(value)


def coerce(name: str, text: str, hint):
    """A knob's value from its --set text; a tuple knob takes comma-separated values."""
    if is_tuple(hint):
        return tuple(_coerce(name, part.strip(), element(hint)) for part in text.split(",") if part.strip())
    return _coerce(name, text, hint)


def split(settings: dict, knobs: type[Knobs], fabric_keys: set[str], fixed: dict[str, str],
          scenario: str) -> tuple[dict, dict]:
    """{key: value} -> (knob settings, fabric settings); ParamError for a key that is neither, or
    one the scenario sets itself (`fixed`: key -> why)."""
    mine, fabric = {}, {}
    for key, value in settings.items():
        if key in fixed:
            raise ParamError(f"{scenario}: {key} is not a parameter here: {fixed[key]}")
        if key in knobs.names():
            mine[key] = value
        elif key in fabric_keys:
            fabric[key] = value
        else:
            known = sorted(set(knobs.names()) | fabric_keys - set(fixed))
            raise ParamError(f"{scenario}: unknown parameter {key!r}; known: {', '.join(known)}")
    return mine, fabric


def spread(settings: dict, takes: dict[str, set[str]]) -> dict[str, dict]:
    """The tour's --set: each scenario gets the settings it takes (`takes`: scenario -> the keys
    it takes) and runs without the others, so `--set flaps=3` reaches the scenarios that flap;
    ParamError (one line) for a key that no scenario of the tour takes."""
    known = set().union(*takes.values())
    nobody = [key for key in settings if key not in known]
    if nobody:
        raise ParamError(f"--set {nobody[0]}: no scenario of the tour takes it; they take: "
                         f"{', '.join(sorted(known))}")
    return {name: {k: v for k, v in settings.items() if k in keys} for name, keys in takes.items()}


def fabric_keys(families: tuple[str, ...]) -> set[str]:
    """The parameters every one of `families` has (what `topo show FAMILY --set` takes)."""
    from testbed.model.families import get
    keys = [{f.name for f in dataclasses.fields(get(family).params)} for family in families]
    return set.intersection(*keys) if keys else set()
