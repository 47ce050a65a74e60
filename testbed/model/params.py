"""Family parameters: typed, defaulted, overridable with KEY=VALUE, validated before anything is built.

Every number has a range (BOUNDS) and must be finite; ints must be ints, bools bools. A family adds
the rules that tie its parameters together (`rules`) and says, by arithmetic alone, how many ports
each kind of switch needs (`ports`), how big the fabric is (`size`) and how fast its cables are
(`link_gbps`): testbed.model.limits checks those before a single model object exists.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import typing
from dataclasses import dataclass
from typing import ClassVar

from testbed.core.errors import ParamError

OPENFLOW_PORTS = 65280    # OpenFlow numbers a switch's ports 1..0xff00: no fan-out goes beyond
IP_OCTET = 256            # an index that is one octet of a NIC's IP (10.nic.group.host)
HOSTS_PER_OCTET = 250     # hosts are .1-.250: the top of the range stays clear of the gateway
GBPS = (1, 1600, "Gb/s; Ethernet's fastest port is 1.6T")
# a model link between two switches may stand for a bundle of their ports (a scaled-down
# uplink tier: the segment preset's 8 uplinks carry what 60 x 400G carry): up to a whole
# 51.2T switch
BUNDLE_GBPS = (1, 51_200, "Gb/s; one link may stand for a bundle, at most a 51.2T switch's ports")


@dataclass(frozen=True)
class Params:
    """Parameters every family shares."""
    radix: int = 64          # ports per switch
    scale: float = 0.05      # emulated Mbit/s per paper Gbit/s (400G -> 20 Mbit/s)

    # name -> (lowest, highest, why): every number parameter of a family has an entry
    BOUNDS: ClassVar[dict[str, tuple]] = {
        "radix": (2, OPENFLOW_PORTS, "OpenFlow numbers ports up to 65280"),
        # below, a 200G link would crawl at under 0.01 Mbit/s; above, a 400G link would need more
        # than 4 Gbit/s of veth and HTB, far past what the emulator forwards on a few cores
        "scale": (0.00005, 10.0, "emulated Mbit/s per paper Gb/s"),
        # every family has a host port rate and an uplink rate (fields of its own: defaults differ)
        "host_gbps": GBPS,
        "uplink_gbps": GBPS,
    }

    def check(self) -> None:
        """Raise ParamError naming the parameter and the rule it breaks."""
        hints = _hints(type(self))
        for f in dataclasses.fields(self):
            _check_value(f.name, getattr(self, f.name), hints[f.name], self.BOUNDS.get(f.name))
        self.rules()

    def rules(self) -> None:
        """The family's rules between parameters (ParamError); none here."""

    def switch_radix(self) -> int:
        """The ports per switch the fabric is held to: `radix` (a topology file sets its own)."""
        return self.radix

    def ports(self) -> dict[str, tuple[int, int]]:
        """role -> (ports down, ports up) of the busiest switch of that role."""
        raise NotImplementedError

    def size(self):
        """The fabric's counts (testbed.model.limits.Size), by arithmetic."""
        raise NotImplementedError

    def link_gbps(self) -> list[float]:
        """The paper's rate of every kind of cable in the fabric."""
        raise NotImplementedError

    @classmethod
    def describe(cls) -> list[tuple[str, str, object]]:
        """(name, type, default) for `topo show --help`-style listings."""
        hints = _hints(cls)
        return [(f.name, _type_name(hints[f.name]), f.default) for f in dataclasses.fields(cls)]


@functools.cache
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def _type_name(hint) -> str:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return (args[0] if args else hint).__name__


def _target(hint) -> tuple[type, bool]:
    """(the type a parameter holds, whether it may be None)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return (args[0] if args else hint), type(None) in typing.get_args(hint)


def _check_value(name: str, value, hint, bound) -> None:
    target, optional = _target(hint)
    if value is None and optional:
        return
    if not _is_a(value, target):
        raise ParamError(f"{name}={value!r}: expected {target.__name__}")
    if target in (int, float):
        if not math.isfinite(value):
            raise ParamError(f"{name}={value}: must be a finite number")
        lo, hi, why = bound
        if not lo <= value <= hi:
            raise ParamError(f"{name}={value}: must be between {lo} and {hi} ({why})")


def _is_a(value, target: type) -> bool:
    if isinstance(value, bool) or target is bool:   # True is an int to Python, not to us
        return isinstance(value, bool) and target is bool
    if target is float:
        return isinstance(value, (int, float))
    return isinstance(value, target)


def _coerce(name: str, text: str, hint):
    target, optional = _target(hint)
    if text.lower() in ("none", "") and optional:
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


def parse_settings(items: list[str]) -> dict[str, str]:
    """["key=value", ...] (the --set options) -> {key: value}."""
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ParamError(f"--set {item!r}: expected KEY=VALUE")
        pairs[key.strip()] = value.strip()
    return pairs


def make_params(cls: type[Params], settings: dict[str, object] | list[str] | None = None) -> Params:
    """Build and check `cls` from {key: value} or ["key=value", ...] (values may be strings)."""
    if isinstance(settings, list):
        settings = parse_settings(settings)
    hints = _hints(cls)
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


def changed(params: Params) -> str:
    """The parameters that differ from their defaults, as KEY=VALUE (for messages)."""
    pairs = [f"{f.name}={getattr(params, f.name)}" for f in dataclasses.fields(params)
             if getattr(params, f.name) != f.default]
    return ", ".join(pairs) or "the defaults"
