"""Scenarios from outside the tree: a `--custom FILE.py` whose top level calls `register(cls)`, or
an installed package's `hpn_testbed.scenarios` entry point naming its Scenario subclass.

A plug-in scenario is checked like ours before it joins (`malformed`): a free, well-formed name;
a claim, title and paper; not in the tour (that is ours); `run` and a `judge` of its own; fabric
families that are registered, and base/fixed settings that are their parameters; knobs typed
(int, float, bool, str, or a tuple of one), numbers ranged (BOUNDS), each with its help; and the
defaults, full and quick, accepted by `configure` (the knobs' checks, the fabric model's
arithmetic and size limits, `meaningful`).
The one ParamError line names the scenario and the problem; the plug-in loader adds the file.
"""
from __future__ import annotations

import dataclasses
import re
import typing

from testbed.core.errors import ParamError
from testbed.scenario.base import Scenario
from testbed.scenario.knobs import Knobs, element, is_tuple

NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
MAX_NAME = 40
KNOB_TYPES = (int, float, bool, str)
PLUGGED: dict[str, type[Scenario]] = {}      # name -> class, in registration order


def register(cls: type[Scenario], taken: typing.Iterable[str] = ()) -> type[Scenario]:
    """Make the Scenario subclass `cls` one `hpn-testbed list` shows and `run NAME` runs (also
    usable as a class decorator); `taken`: the names already in use (the built-in scenarios').
    ParamError (one line) for a malformed one."""
    name = getattr(cls, "name", None)
    problem = malformed(cls, {*taken, *PLUGGED})
    if problem:
        raise ParamError(f"scenario {name!r} not registered: {problem}")
    PLUGGED[cls.name] = cls
    return cls


def unregister(name: str) -> None:
    """Forget a plug-in scenario (tests that register throwaway ones)."""
    PLUGGED.pop(name, None)


def malformed(cls, taken: set[str]) -> str | None:
    """Why `cls` cannot be registered beside the scenarios named `taken`, or None."""
    if not (isinstance(cls, type) and issubclass(cls, Scenario)) or cls is Scenario:
        return "not a Scenario subclass (class X(Scenario, name=..., claim=...))"
    if not isinstance(cls.name, str) or not NAME.fullmatch(cls.name) or len(cls.name) > MAX_NAME:
        return f"name: lower-case words joined by '-', at most {MAX_NAME} characters"
    if cls.name in taken:
        return "the name is taken"
    for attr in ("claim", "title", "paper"):
        value = getattr(cls, attr)
        if not isinstance(value, str) or not value.strip() or "\n" in value:
            return f"no {attr} (one line of text)"
    if cls.tour:
        return "tour=True: the tour (`run` with no name) is the built-in claims; run it by name"
    for step in ("run", "judge"):
        if getattr(cls, step) is getattr(Scenario, step):
            return f"no {step}() of its own"
    return fabric_problem(cls) or knobs_problem(cls.Knobs) or defaults_problem(cls)


def fabric_problem(cls) -> str | None:
    """The families it names are registered; base and fixed set their parameters."""
    from testbed.model.families import registered
    from testbed.scenario.knobs import fabric_keys
    if not isinstance(cls.families, tuple):
        return "families must be a tuple of family names"
    unknown = [f for f in cls.families if f not in registered()]
    if unknown:
        return f"family {unknown[0]!r} is not registered; known: {', '.join(registered())}"
    keys = fabric_keys(cls.families)
    for attr in ("base", "fixed"):
        extra = sorted(set(getattr(cls, attr)) - keys)
        if extra:
            fabrics = " and ".join(cls.families) or "its fabric"
            return f"{attr} sets {extra[0]!r}, not a parameter of {fabrics}"
    overlap = sorted(keys & set(cls.Knobs.names())) if isinstance(cls.Knobs, type) else []
    if overlap:
        return f"knob {overlap[0]!r} has the name of a fabric parameter"
    return None


def knobs_problem(knobs) -> str | None:
    """Knobs: a frozen dataclass subclassing Knobs, each field typed, numbers ranged, helped."""
    if not (isinstance(knobs, type) and issubclass(knobs, Knobs) and dataclasses.is_dataclass(knobs)):
        return "Knobs must be a @dataclass(frozen=True) subclass of testbed.scenario.knobs.Knobs"
    try:
        hints = typing.get_type_hints(knobs)
    except Exception as e:  # noqa: BLE001 - an annotation naming nothing: one line
        return f"Knobs: unreadable annotations ({e})"
    names = knobs.names()
    for table in ("QUICK", "BOUNDS", "HELP"):
        stray = sorted(set(getattr(knobs, table)) - set(names))
        if stray:
            return f"Knobs.{table} names {stray[0]!r}, not a knob"
    for name in names:
        kind = element(hints[name]) if is_tuple(hints[name]) else hints[name]
        if kind not in KNOB_TYPES:
            return f"knob {name}: type must be int, float, bool, str or tuple[one of them, ...]"
        bound = knobs.BOUNDS.get(name)
        if kind in (int, float) and not (isinstance(bound, tuple) and len(bound) == 3):
            return f"knob {name}: a number needs BOUNDS[{name!r}] = (lowest, highest, why)"
        if not knobs.HELP.get(name):
            return f"knob {name}: no HELP (a few words saying what it is)"
    return None


def defaults_problem(cls) -> str | None:
    """The scenario at its defaults, full and quick: checked as a run would check it."""
    for quick in (False, True):
        try:
            cls().configure({}, quick)
        except ParamError as e:
            return f"its {'quick ' if quick else ''}defaults are refused: {e}"
        except Exception as e:  # noqa: BLE001 - a user's configure or meaningful: one line
            return f"its defaults: {type(e).__name__}: {' '.join(str(e).split())}"
    return None
