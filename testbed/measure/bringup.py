"""The bring-up checks `up --check` (and the shell's `check`) run, in order: the wiring
(wiring.py), reachability, a top-tier TCP flow, bond spreading (checks.py).

With a user's controller app instead of ours the wiring check is skipped (it reads the
postcards our app reports, which a foreign app does not write) and says so; the others test
the fabric's forwarding, whoever programs it, and apply as they are."""
from __future__ import annotations

from testbed.emulation.build import Emulation
from testbed.measure import checks, wiring


def run_all(emu: Emulation, full: bool = False) -> list[checks.Check]:
    """The `up --check` checks on a running emulation (wiring, reachability, a TCP flow across
    the top tier, bond spreading), each a Check(name, passed, detail); `full`: every NIC pair.
    Wiring reads our controller's postcards, so with a user's app instead of ours it is skipped."""
    steps = [("wiring", wiring.check if emu.controller.ours else skipped_wiring),
             ("reachability", lambda e: checks.reachability(e, full)),
             ("top-tier TCP", checks.top_tier_tcp), ("bond spreading", checks.bond_spreading)]
    results = [checks.guarded(name, check, emu) for name, check in steps]
    return [c for c in results if c is not None]


def skipped_wiring(emu: Emulation) -> checks.Check:
    """The wiring check under a user's app alone: not run (the postcards are our app's)."""
    return checks.Check("wiring", True, f"skipped: it reads our controller's postcards; "
                        f"{emu.controller.app.label} runs instead of ours", {"skipped": True})
