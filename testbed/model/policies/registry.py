"""The routing policies a run may name: the built-in ones (testbed/model/policies/__init__.py
registers them) and any a user's file registers (load_file; what `--custom FILE.py` runs).

A policy defined outside this package is remembered with the file that defines it, so the
controller, a process of its own, can load the same file before it reads its routing options
(testbed/emulation/controller.py names it in the controller's spec).
"""
from __future__ import annotations

import hashlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path

from testbed.core.errors import ParamError
from testbed.model.policies.base import NicPairs, Number, RoutingPolicy

NAME = re.compile(r"[a-z][a-z0-9-]{0,31}")
RESERVED = {"ecmp", "core", "policy"}      # the routing options every policy has (options.py)
HOOKS = ("refuses", "routes", "samples", "tracker")
_POLICIES: dict[str, tuple[RoutingPolicy, str | None]] = {}   # name -> (policy, defining file)


def malformed(policy: object) -> str | None:
    """Why `policy` cannot be registered, or None."""
    if not isinstance(policy, RoutingPolicy):
        return (f"{type(policy).__name__} is not a RoutingPolicy "
                "(subclass testbed.model.policies.RoutingPolicy)")
    if not isinstance(policy.name, str) or not NAME.fullmatch(policy.name):
        return f"name {policy.name!r}: lowercase letters, digits and '-', at most 32"
    if not isinstance(policy.summary, str) or not policy.summary.strip():
        return "no summary (one line saying what it does)"
    if not isinstance(policy.whole_fabric, bool):
        return "whole_fabric must be True or False"
    if not isinstance(policy.options, tuple):
        return "options must be a tuple of Number or NicPairs"
    seen = set()
    for option in policy.options:
        if not isinstance(option, (Number, NicPairs)):
            return f"option {option!r}: not a Number or NicPairs"
        if option.name in RESERVED or option.name in seen or not NAME.fullmatch(option.name):
            return f"option {option.name!r}: a name taken, or not lowercase letters, digits and '-'"
        seen.add(option.name)
        problem = option.malformed()
        if problem:
            return f"option {option.name!r}: {problem}"
    for hook in HOOKS:
        if not callable(getattr(policy, hook, None)):
            return f"{hook} is not a method"
    return None


def defining_file(policy: RoutingPolicy) -> str | None:
    """The file that defines `policy`'s class; None for a built-in policy."""
    cls = type(policy)
    if cls.__module__.startswith("testbed.model.policies."):
        return None
    try:
        return str(Path(inspect.getfile(cls)).resolve())
    except (TypeError, OSError):
        return None


def register(policy: RoutingPolicy) -> RoutingPolicy:
    """Make `policy` one a run may name (`up --policy NAME`, routing `policy = "NAME"`).

    One-line ParamError for a malformed policy or a name another policy has. The same class
    registered again from the same file (a module imported twice) replaces its entry."""
    problem = malformed(policy)
    if problem:
        raise ParamError(f"routing policy {getattr(policy, 'name', '?')!r} not registered: {problem}")
    source = defining_file(policy)
    old = _POLICIES.get(policy.name)
    if old is not None and (type(old[0]).__qualname__, old[1]) != (type(policy).__qualname__, source):
        raise ParamError(f"routing policy {policy.name!r} not registered: the name is taken "
                         f"({type(old[0]).__qualname__}, {old[1] or 'built in'})")
    _POLICIES[policy.name] = (policy, source)
    return policy


def unregister(name: str) -> None:
    """Forget a policy (tests that register throwaway ones)."""
    _POLICIES.pop(name, None)


def names() -> tuple[str, ...]:
    return tuple(_POLICIES)


def get(name: object) -> RoutingPolicy:
    if not isinstance(name, str) or name not in _POLICIES:
        raise ParamError(f"routing policy={name!r}: choose from {', '.join(_POLICIES)}")
    return _POLICIES[name][0]


def source(name: str) -> str | None:
    """The file that defines policy `name` (for the controller to load), None if built in."""
    entry = _POLICIES.get(name)
    return entry[1] if entry else None


def load_file(path: str | Path) -> list[str]:
    """Run a user's Python file, which registers its policies with register(); the names it
    registered. One-line ParamError if it cannot be read, fails, or registers none."""
    path = Path(path).resolve()
    if path.suffix != ".py" or not path.is_file():
        raise ParamError(f"{path}: not a Python file")
    module = "hpn_custom_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    before = {n: p for n, (p, _) in _POLICIES.items()}
    spec = importlib.util.spec_from_file_location(module, path)
    if spec is None or spec.loader is None:
        raise ParamError(f"{path}: cannot be loaded as a module")
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[module] = loaded       # (dataclasses and pickling look classes up here)
    try:
        spec.loader.exec_module(loaded)
    except ParamError:
        raise
    except Exception as e:  # noqa: BLE001 (a user's file: any failure is one line, not a traceback)
        raise ParamError(f"{path}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None
    added = [n for n, (p, _) in _POLICIES.items() if before.get(n) is not p]
    if not added:
        raise ParamError(f"{path}: registers no routing policy (call testbed.model.policies.register)")
    return added
