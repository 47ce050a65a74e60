"""How the command line prints: rich tables on a terminal, JSON for machines."""
from __future__ import annotations

import json


def console():
    from rich.console import Console
    return Console()


def table(title, columns, rows):
    from rich.table import Table
    t = Table(title=title)
    for c in columns:
        t.add_column(c)
    for r in rows:
        t.add_row(*[str(x) for x in r])
    return t


def print_json(data) -> None:
    print(json.dumps(data, indent=2, default=str))


def styled(verdict: str) -> str:
    colour = {"reproduced": "green", "invalid": "yellow"}.get(verdict, "red")
    return f"[{colour}]{verdict}[/{colour}]"
