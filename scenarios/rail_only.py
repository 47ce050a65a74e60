"""C13 rail-only: being built (a placeholder so the scenario list has its place)."""
from __future__ import annotations

from scenarios.base import Scenario


class Placeholder(Scenario, name="rail-only", claim="C13"):
    title = "(being built)"
    paper = ""
    families = ("hpn",)

    def run(self, quick: bool) -> dict:
        raise NotImplementedError("rail-only is being built")
