"""The one list of fault kinds: the CLI's `fault` command and the experiment files' [[fault]]
tables offer exactly these. A new kind is one module (see testbed/emulation/faults/kinds.py)
and one `register` line here, or a `register` call of the user's own (a `--custom FILE.py`, or an
installed package's `hpn_testbed.fault_kinds` entry point, loaded at the first read)."""
from __future__ import annotations

from testbed.emulation.faults.impair import Impair
from testbed.emulation.faults.kinds import FaultKind, Registry
from testbed.emulation.faults.library import Flap, LinkDown, OneWay, SwitchDown

REGISTRY = Registry(entry_points=True)
register = REGISTRY.register
unregister = REGISTRY.unregister

register(LinkDown())
register(Flap())
register(OneWay())
register(SwitchDown())
register(Impair())


def kinds() -> list[FaultKind]:
    return list(REGISTRY)


def get(name: str) -> FaultKind:
    """The kind called `name` (ParamError naming the known ones)."""
    return REGISTRY.get(name)
