"""Plug-ins from installed packages: entry points, one group per kind of thing a package may add.

    [project.entry-points."hpn_testbed.families"]      # or setup(entry_points={...})
    dualroot = "my_fabrics:DUALROOT"                   # the object to register

A registry calls `load(KIND, register)` where it is first read (not at import: `import testbed`
and the controller stay cheap when nothing is installed, and a package's module may import the
registry it registers with). Each entry point's object is registered with the registry's own
`register`, so it is checked exactly like a built-in or a `--custom` file's; an entry point
naming a module (no `:attr`) is one whose import registers what it defines. A package whose entry
point fails to import, or whose object the registry refuses, is one ParamError line naming the
distribution, the entry point and the problem (exit status 2), before anything is built.
"""
from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from testbed.core.errors import ParamError

GROUPS = {"families": "hpn_testbed.families", "policies": "hpn_testbed.policies",
          "fault_kinds": "hpn_testbed.fault_kinds", "scenarios": "hpn_testbed.scenarios"}
_done: set[str] = set()            # the kinds whose group was loaded in this process
_loading: list[str] = []           # "DIST: NAME = VALUE" of the entry point loading now


def loading() -> str | None:
    """The entry point whose object is being loaded or registered now, or None (a registry that
    remembers a plug-in's file for the controller leaves these out: it loads them itself)."""
    return _loading[-1] if _loading else None


def found(kind: str) -> list:
    """The installed entry points of `kind`'s group, in a stable order (distribution, name)."""
    from importlib import metadata
    eps = metadata.entry_points(group=GROUPS[kind])       # (the keyword is new in 3.10)
    return sorted(eps, key=lambda ep: (distribution(ep), ep.name))


def distribution(ep) -> str:
    dist = getattr(ep, "dist", None)
    return dist.name if dist is not None else "an unknown distribution"


def load(kind: str, register: Callable[[object], object], known: Callable[[object], bool]) -> None:
    """Register every entry point of `kind` once per process: `known(obj)` says whether the
    object is already registered (a module that registered it on import)."""
    if kind in _done:
        return
    _done.add(kind)                  # first: a package's module may read the registry itself
    for ep in found(kind):
        where = f"{distribution(ep)}: entry point {ep.name} = {ep.value} ({GROUPS[kind]})"
        _loading.append(where)
        try:
            obj = ep.load()
            if not isinstance(obj, ModuleType) and not known(obj):
                register(obj)
        except ParamError as e:
            raise ParamError(f"{where}: {e}") from None
        except Exception as e:  # noqa: BLE001 - a package's import may raise anything: one line
            raise ParamError(f"{where}: {type(e).__name__}: {' '.join(str(e).split())}") from None
        finally:
            _loading.pop()


def forget() -> None:
    """Load every group again at its next read (tests that install a fake distribution)."""
    _done.clear()
