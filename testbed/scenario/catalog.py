"""Every scenario by name: the built-in claims first (the package CLAIMS, whose MODULES lists
them in order: `hpn-testbed list` shows them so, `run` with no name runs those whose class says
`tour=True`), then the plug-ins' (`--custom FILE.py`, an installed package's
`hpn_testbed.scenarios` entry point) in the order they registered, each checked (registry.py).

The claims are a package written with this framework, found by name when first asked for (as a
plug-in's are), so the library never imports them and `import testbed` stays cheap.
"""
from __future__ import annotations

import importlib

from testbed.core.errors import ParamError
from testbed.scenario import registry
from testbed.scenario.base import Scenario

CLAIMS = "scenarios"       # the built-in claims: CLAIMS.MODULES, each a module of CLAIMS.claims


def scenario_class(module: str) -> type[Scenario]:
    """The Scenario subclass CLAIMS/claims/MODULE (a module, or a package for a claim with parts)
    defines (not one it imports)."""
    namespace = importlib.import_module(f"{CLAIMS}.claims.{module}")
    (cls,) = [c for c in vars(namespace).values() if isinstance(c, type) and issubclass(c, Scenario)
              and c.__module__ == namespace.__name__]
    return cls


def built_in() -> dict[str, type[Scenario]]:
    classes = [scenario_class(module) for module in importlib.import_module(CLAIMS).MODULES]
    return {cls.name: cls for cls in classes}


def register(cls: type[Scenario]) -> type[Scenario]:
    """Add a Scenario subclass of a plug-in (what `--custom FILE.py` or an entry point calls),
    checked like ours: ParamError, one line, for a name taken or malformed, untyped or unranged
    knobs, no judge, defaults the model refuses (registry.py). Returns `cls`, so it also
    decorates the class."""
    return registry.register(cls, built_in())


unregister = registry.unregister


def all_scenarios() -> dict[str, type[Scenario]]:
    """Ours in MODULES' order, then the plug-ins' and (loaded at this first read) the installed
    packages' in the order they registered."""
    from testbed.core import entrypoints
    entrypoints.load("scenarios", register, lambda c: registry.PLUGGED.get(getattr(c, "name", None)) is c)
    return {**built_in(), **registry.PLUGGED}


def tour() -> list[str]:
    """The headline scenarios `hpn-testbed run` (and `make demo`) runs, in order."""
    return [name for name, cls in all_scenarios().items() if cls.tour]


def get(name: str):
    scenarios = all_scenarios()
    if name not in scenarios:
        raise ParamError(f"no scenario {name!r}; `hpn-testbed list` names them: "
                         f"{', '.join(scenarios) or 'none yet'}")
    return scenarios[name]()
