"""C9 miswiring: being built (a placeholder so the scenario list has its place)."""
from __future__ import annotations

from scenarios.base import Scenario


class Placeholder(Scenario, name="miswiring", claim="C9"):
    title = "(being built)"
    paper = ""
    families = ("hpn",)

    def run(self, quick: bool) -> dict:
        raise NotImplementedError("miswiring is being built")
