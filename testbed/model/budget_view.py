"""Reading a budget() result (testbed.model.budget): its entries, as plain-text lines or as
rich tables."""
from __future__ import annotations

from collections import defaultdict


def claim_entries(result: dict):
    """(claim id, key, entry) for every figure in a budget() result."""
    for cid, entries in result.items():
        if cid != "meta":
            for key, entry in entries.items():
                yield cid, key, entry


TITLES = {"B1": "HPN ToR (51.2T, 128 x 400G)", "B2": "HPN segment (tier 1)",
          "B3": "HPN pod (tier 2) and the step table", "B4": "MPFT (DeepSeek-V3, 8 planes)",
          "C13": "rail-only tier 2 (HPN lessons, Table 4), next to HPN's pod"}


def _fmt(value) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".")
    return str(value)


def _exact(value) -> str:
    return f"{value:,.4f}".rstrip("0").rstrip(".") if isinstance(value, float) else _fmt(value)


def _model(entry) -> str:
    """The model's figure as the paper rounds it, then exactly where that differs."""
    text = _fmt(entry["shown"])
    if entry["shown"] != entry["figure"]:
        text += f" ({_exact(entry['figure'])})"
    return text


def rows(result: dict) -> list[tuple[str, str, str, str, str, str, str]]:
    """(claim, figure, model, paper, unit, source, ok) per entry, as strings."""
    out = []
    for cid, _, e in claim_entries(result):
        out.append((cid, e["what"], _model(e), _fmt(e["paper"]), e["unit"], e["source"],
                    "ok" if e["match"] else "DIFFERS"))
    return out


def render_text(result: dict) -> list[str]:
    """Plain-text table lines."""
    header = ("claim", "figure", "model", "paper", "unit", "source", "")
    table = [header] + rows(result)
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = [f"{result['meta']['family']} preset {result['meta']['preset']!r}: "
             f"built in {result['meta']['seconds']['build']} s, "
             f"counted in {result['meta']['seconds']['count']} s"]
    for i, r in enumerate(table):
        lines.append("  ".join(c.ljust(w) if j in (0, 1, 4, 5) else c.rjust(w)
                               for j, (c, w) in enumerate(zip(r, widths))).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def render(result: dict):
    """One rich renderable (a Group): a table per claim, then the timings and notes."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    out = []
    by_claim = defaultdict(list)
    for cid, _, e in claim_entries(result):
        by_claim[cid].append(e)
    for cid, entries in by_claim.items():
        table = Table(title=f"{cid} {TITLES.get(cid, '')}", title_justify="left")
        for col, just in (("figure", "left"), ("model", "right"), ("paper", "right"),
                          ("unit", "left"), ("source", "left"), ("", "left")):
            table.add_column(col, justify=just)
        for e in entries:
            table.add_row(e["what"], _model(e), _fmt(e["paper"]), e["unit"], e["source"],
                          Text("ok", style="green") if e["match"]
                          else Text("DIFFERS", style="bold red"))
        out.append(table)
    meta = result["meta"]
    notes = [f"built in {meta['seconds']['build']} s, counted in {meta['seconds']['count']} s "
             f"({meta['built']['switches']:,} switches, {meta['built']['links']:,} links)"]
    out.append(Text("\n".join(notes), style="dim"))
    return Group(*out)
