"""Family parameters: typed, defaulted, overridable with KEY=VALUE, validated before anything is built."""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass

from testbed.core.errors import ParamError


@dataclass(frozen=True)
class Params:
    """Parameters every family shares."""
    radix: int = 64          # ports per switch
    scale: float = 0.05      # emulated Mbit/s per paper Gbit/s (400G -> 20 Mbit/s)

    def check(self) -> None:
        """Raise ParamError naming the parameter and the rule it breaks."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0 \
                    and f.name not in self.may_be_zero():
                raise ParamError(f"{f.name}={value}: must be at least 1" if isinstance(value, int)
                                 else f"{f.name}={value}: must be positive")

    def may_be_zero(self) -> set[str]:
        return set()

    @classmethod
    def describe(cls) -> list[tuple[str, str, object]]:
        """(name, type, default) for `topo show --help`-style listings."""
        hints = typing.get_type_hints(cls)
        return [(f.name, _type_name(hints[f.name]), f.default) for f in dataclasses.fields(cls)]


def _type_name(hint) -> str:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return (args[0] if args else hint).__name__


def _coerce(name: str, text: str, hint):
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    target = args[0] if args else hint
    if text.lower() in ("none", "") and type(None) in typing.get_args(hint):
        return None
    try:
        if target is bool:
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        return target(text)
    except ValueError:
        raise ParamError(f"{name}={text!r}: expected {target.__name__}") from None


def make_params(cls: type[Params], settings: dict[str, object] | list[str] | None = None) -> Params:
    """Build and check `cls` from {key: value} or ["key=value", ...] (values may be strings)."""
    if isinstance(settings, list):
        pairs = {}
        for item in settings:
            key, sep, value = item.partition("=")
            if not sep:
                raise ParamError(f"--set {item!r}: expected KEY=VALUE")
            pairs[key.strip()] = value.strip()
        settings = pairs
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    values = {}
    for key, value in (settings or {}).items():
        if key not in known:
            raise ParamError(f"unknown parameter {key!r} for {cls.family}; "
                             f"known: {', '.join(sorted(known))}")
        values[key] = _coerce(key, value, hints[key]) if isinstance(value, str) else value
    params = cls(**values)
    params.check()
    return params
