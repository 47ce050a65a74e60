"""C7 segment-placement: being built (a placeholder so the scenario list has its place)."""
from __future__ import annotations

from scenarios.base import Scenario


class Placeholder(Scenario, name="segment-placement", claim="C7"):
    title = "(being built)"
    paper = ""
    families = ("hpn",)

    def run(self, quick: bool) -> dict:
        raise NotImplementedError("segment-placement is being built")
