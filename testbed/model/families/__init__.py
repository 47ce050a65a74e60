"""The registry of fabric families, and the one entry point that makes a fabric from a family name.

Adding a family is one module exporting one Family (families/family.py says what it answers)
and one line in BUILT_IN; a family of the user's own is a Python file passed to `load`, which
registers the Family objects it defines (what a `--custom FILE.py` option would call), or an
installed package's `hpn_testbed.families` entry point (testbed/core/entrypoints.py), loaded
when the registry is first read (`registered()`, `get`).
"""
from __future__ import annotations

import dataclasses

from testbed.core import entrypoints, plugins
from testbed.core.errors import ParamError
from testbed.model.fabric import Fabric
from testbed.model.families.clos3 import CLOS3
from testbed.model.families.family import Budget, Family, check
from testbed.model.families.hpn import HPN
from testbed.model.families.mpft import MPFT
from testbed.model.families.mrft import MRFT
from testbed.model.families.railonly import RAILONLY
from testbed.model.families.topofile import FILE

__all__ = ["FAMILIES", "Budget", "Family", "budgeted", "from_spec", "get", "load", "make_fabric",
           "of", "preset_names", "register", "registered", "spec_of"]

BUILT_IN = [HPN, MPFT, MRFT, CLOS3, RAILONLY, FILE]

FAMILIES: dict[str, Family] = {}     # name -> Family, in registration order


def register(family: Family) -> Family:
    """Add `family` to the registry and return it; ParamError (one line) for a name already taken
    or a missing answer (families.family.check). Registered by a plug-in file (--custom), it
    keeps the file as its `origin`, for the controller."""
    check(family, FAMILIES)
    if family.origin is None and plugins.loading():     # registered by a plug-in file's top level
        family = dataclasses.replace(family, origin=plugins.loading())
    FAMILIES[family.name] = family
    return family


def _built_in(family: Family) -> None:
    """Register one of ours: no origin, even when a plug-in's import is what imports this module
    (the controller must not load that plug-in to find `hpn`)."""
    check(family, FAMILIES)
    FAMILIES[family.name] = family


def registered() -> dict[str, Family]:
    """Every family, name -> Family in registration order: the built-in ones, the plug-ins'
    and, read here first, the installed packages' entry points."""
    entrypoints.load("families", register,
                     lambda f: FAMILIES.get(getattr(f, "name", None)) is f)
    return FAMILIES


def get(name: str) -> Family:
    """The registered family called `name`; ParamError naming the choices."""
    if name not in registered():
        raise ParamError(f"unknown family {name!r}; choose from {', '.join(FAMILIES)}")
    return FAMILIES[name]


def of(fabric: Fabric) -> Family:
    """The family a built fabric belongs to."""
    return get(fabric.family)


def budgeted() -> dict[str, Family]:
    """The families with a full-scale port budget (`topo budget`), in registration order."""
    return {name: f for name, f in registered().items() if f.budget is not None}


def preset_names() -> list[str]:
    """Every emulated preset's name, of any family (the choices of `--preset`)."""
    return sorted({name for f in registered().values() for name in f.presets})


def make_fabric(family: str, settings: dict | list[str] | None = None,
                emulated: bool = True) -> Fabric:
    """The fabric of `family` with `settings` ({key: value} or ["key=value"]), validated before it
    is built (Family.make)."""
    return get(family).make(settings, emulated)


def spec_of(fabric: Fabric) -> dict:
    """What names `fabric` to another process (a run's spec.json): its family and parameters,
    and the file its family came from when it was loaded from one (`load`)."""
    origin = of(fabric).origin
    return {"family": fabric.family, "params": dataclasses.asdict(fabric.params),
            **({"family_file": origin, "family_sha256": plugins.digest(origin)} if origin else {})}


def from_spec(spec: dict) -> Fabric:
    """The fabric `spec` (spec_of's dict) names, its family's file loaded first if it has one:
    exactly what was checked when the spec was written (its sha256), else ParamError."""
    if spec.get("family_file"):
        load(spec["family_file"], spec.get("family_sha256") or "")
    return make_fabric(spec["family"], spec["params"])


def load(path, sha256: str | None = None) -> list[Family]:
    """Run the Python file `path` (a plug-in, testbed/core/plugins.py) and register every Family
    it registered or defines at its top level (a family it imports from elsewhere is left alone).
    Returns them, each with `origin` = the file, so that a process started later (the controller)
    can load the same file (`sha256`: refused unless the file's bytes have that digest). Loading
    a file twice registers nothing new."""
    path = str(plugins.resolve(path))
    mine = [f for f in FAMILIES.values() if f.origin == path]
    if mine:
        if plugins.loaded(path):
            plugins.load(path, sha256)      # the same module; refused if another digest
        return mine
    module = plugins.load(path, sha256)
    found = [f for f in FAMILIES.values() if f.origin == path]
    found += [register(dataclasses.replace(v, origin=path)) for v in list(vars(module).values())
              if isinstance(v, Family) and v.name not in FAMILIES]
    if not found:
        raise ParamError(f"{path}: defines no Family")
    return found


for _family in BUILT_IN:
    _built_in(_family)
