"""Fabric families and the one entry point that makes a fabric from a family name and settings."""
from __future__ import annotations

from testbed.core.errors import ParamError
from testbed.model import limits
from testbed.model.fabric import Fabric
from testbed.model.families import clos3, hpn, mpft, mrft, railonly
from testbed.model.params import make_params

FAMILIES = {
    "hpn": (hpn.HpnParams, hpn.build),
    "mpft": (mpft.MpftParams, mpft.build),
    "mrft": (mrft.MrftParams, mrft.build),
    "clos3": (clos3.Clos3Params, clos3.build),
    "railonly": (railonly.RailOnlyParams, railonly.build),
}


def make_fabric(family: str, settings=None, emulated: bool = True) -> Fabric:
    """The fabric of `family` with `settings` ({key: value} or ["key=value"]), validated.

    The parameters are checked, then the fabric's size and ports by arithmetic (limits.py),
    and only then is it built. emulated=False takes the model's larger size limit instead of the
    emulator's and skips the limits only Mininet has (interface names, slowest rate), for
    paper-scale budgets.
    """
    if family not in FAMILIES:
        raise ParamError(f"unknown family {family!r}; choose from {', '.join(FAMILIES)}")
    cls, build = FAMILIES[family]
    params = make_params(cls, settings)
    limits.check(params, emulated)      # from the parameters alone: nothing built yet
    fabric = build(params)
    fabric.validate(emulated)
    return fabric
