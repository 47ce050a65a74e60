"""The bring-up checks `up --check` (and the shell's `check`) run, in order: the wiring
(wiring.py), reachability, a top-tier TCP flow, bond spreading (checks.py)."""
from __future__ import annotations

from testbed.emulation.build import Emulation
from testbed.measure import checks, wiring


def run_all(emu: Emulation, full: bool = False) -> list[checks.Check]:
    """The `up --check` checks on a running emulation (wiring, reachability, a TCP flow across
    the top tier, bond spreading), each a Check(name, passed, detail); `full`: every NIC pair."""
    steps = [("wiring", wiring.check), ("reachability", lambda e: checks.reachability(e, full)),
             ("top-tier TCP", checks.top_tier_tcp), ("bond spreading", checks.bond_spreading)]
    results = [checks.guarded(name, check, emu) for name, check in steps]
    return [c for c in results if c is not None]
