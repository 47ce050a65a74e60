"""C8 core-pipeline: being built (a placeholder so the scenario list has its place)."""
from __future__ import annotations

from scenarios.base import Scenario


class Placeholder(Scenario, name="core-pipeline", claim="C8"):
    title = "(being built)"
    paper = ""
    families = ("hpn",)

    def run(self, quick: bool) -> dict:
        raise NotImplementedError("core-pipeline is being built")
