"""The routing policies a run may name: the built-in ones (testbed/model/policies/__init__.py
registers them), any a user's file registers (`--custom FILE.py`, load_file) and an installed
package's `hpn_testbed.policies` entry points (testbed/core/entrypoints.py), read here first.

A policy defined outside this package is remembered with the file that registered it (the
plug-in file running, else the file defining its class), so the controller, a process of its
own, can load the same file before it reads its routing options (testbed/emulation/control/controller.py
names it in the controller's spec). An entry point's policy needs no file: the controller's
registry loads the same entry points.
"""
from __future__ import annotations

import inspect
import re
from pathlib import Path

from testbed.core import entrypoints, plugins
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


def built_in(policy: RoutingPolicy) -> bool:
    return type(policy).__module__.startswith("testbed.model.policies.")


def defining_file(policy: RoutingPolicy) -> str | None:
    """The file that defines `policy`'s class; None for a built-in policy."""
    cls = type(policy)
    if built_in(policy):
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
    # ours and an entry point's need no file (the controller has them); a plug-in's is the file
    # running (which the controller loads again), else the one defining the class
    mine = built_in(policy) or entrypoints.loading()
    source = None if mine else plugins.loading() or defining_file(policy)
    old = _POLICIES.get(policy.name)
    if old is not None and (type(old[0]).__qualname__, old[1]) != (type(policy).__qualname__, source):
        raise ParamError(f"routing policy {policy.name!r} not registered: the name is taken "
                         f"({type(old[0]).__qualname__}, {old[1] or 'built in'})")
    _POLICIES[policy.name] = (policy, source)
    return policy


def unregister(name: str) -> None:
    """Forget a policy (tests that register throwaway ones)."""
    _POLICIES.pop(name, None)


def _registered() -> dict[str, tuple[RoutingPolicy, str | None]]:
    """The registry, the installed packages' entry points loaded at its first read."""
    entrypoints.load("policies", register,
                     lambda p: _POLICIES.get(getattr(p, "name", None), (None,))[0] is p)
    return _POLICIES


def names() -> tuple[str, ...]:
    return tuple(_registered())


def get(name: object) -> RoutingPolicy:
    if not isinstance(name, str) or name not in _registered():
        raise ParamError(f"routing policy={name!r}: choose from {', '.join(_POLICIES)}")
    return _POLICIES[name][0]


def source(name: str) -> str | None:
    """The file that defines policy `name` (for the controller to load), None if built in."""
    entry = _registered().get(name)
    return entry[1] if entry else None


def load_file(path: str | Path, sha256: str | None = None) -> list[str]:
    """Run a user's Python file once per process (testbed/core/plugins.py: the same module when
    it also registers a family), which registers its policies with register(); the names it
    registered. One-line ParamError if it cannot be read, is not trusted, differs from `sha256`
    (the controller: what `up` checked), fails, or registers none."""
    path = plugins.resolve(path)
    plugins.load(path, sha256)
    added = [n for n, (_, source) in _POLICIES.items() if source == str(path)]
    if not added:
        raise ParamError(f"{path}: registers no routing policy (call testbed.model.policies.register)")
    return added
