"""A teaching picture of a fabric: tiers in rows, links coloured by plane, rail or pod.

Hosts sit at the bottom, then tier 1 (ToR / leaf / edge), tier 2 (agg / spine) and tier 3 (core).
Links are coloured by what separates the family's traffic, as each family says (Family.group): HPN
by plane (the ToR side of a pair), or by rail for single-ToR; MPFT by plane; MRFT by rail (its
spines are shared, so they stay grey); a three-tier Clos by pod. Uses matplotlib's Agg canvas
directly, never pyplot or a display.
"""
from __future__ import annotations

import io
import textwrap
from pathlib import Path

from testbed.core import files
from testbed.core.errors import ParamError
from testbed.model import families
from testbed.model.fabric import Fabric

MAX_NODES = 300          # hosts + switches; beyond this the picture teaches nothing
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#bcbd22", "#7f7f7f"]
SHARED = "#9a9a9a"       # links and switches that belong to no plane / rail / pod
ROW_NAMES = {0: "hosts", 1: "tier 1", 2: "tier 2", 3: "tier 3"}
MANY_HOSTS = 32          # beyond this, hosts are drawn in groups (one box for several)
CROWDED = 22             # nodes in the widest row beyond which names are turned upright


def _switch_key(fab: Fabric, name: str):
    """(group number, legend label) a switch belongs to, or None when it is shared: the family's
    own answer (Family.group)."""
    return families.of(fab).group(fab, fab.switches[name])


def _link_key(fab: Fabric, link):
    """A link takes the group of its upper switch, or of its lower switch when the upper is shared."""
    key = _switch_key(fab, link.b)
    if key is None and link.a in fab.switches:
        key = _switch_key(fab, link.a)
    return key


def _rows(fab: Fabric) -> dict[int, list[str]]:
    rows: dict[int, list[str]] = {0: sorted(fab.hosts, key=lambda h: fab.hosts[h].coords)}
    for name, s in sorted(fab.switches.items(), key=lambda kv: (kv[1].tier, kv[1].coords)):
        rows.setdefault(s.tier, []).append(name)
    return rows


def _host_groups(hosts: list[str], widest_switches: int) -> dict[str, str]:
    """Above MANY_HOSTS, consecutive hosts drawn as one box each (host -> its box's label), as many
    boxes as the widest switch row has switches: a segment's 136 hosts would need 3800 px."""
    if len(hosts) <= MANY_HOSTS:
        return {h: h for h in hosts}
    size = -(-len(hosts) // max(widest_switches, 8))
    chunks = [hosts[k:k + size] for k in range(0, len(hosts), size)]
    return {h: f"{c[0]}\n+{len(c) - 1} more" if len(c) > 1 else c[0] for c in chunks for h in c}


def _title(fab: Fabric, columns: int) -> str:
    params = families.of(fab).title(fab.params)
    text = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in params.items() if v is not None)
    return f"{fab.family.upper()} fabric\n" + "\n".join(textwrap.wrap(text, columns))


class _Colours:
    """Colours by group, remembering each group's legend label as it is used."""

    def __init__(self):
        self.groups: dict[int, str] = {}          # group number -> legend label

    def of(self, key) -> str:
        if key is None:
            return SHARED
        self.groups[key[0]] = key[1]
        return PALETTE[key[0] % len(PALETTE)]


def _positions(rows: dict[int, list[str]], widest: int) -> dict[str, tuple[float, float]]:
    """Each node's (x, y): a row per tier, each row spread over the widest one."""
    pos: dict[str, tuple[float, float]] = {}
    for tier, names in rows.items():
        for i, name in enumerate(names):
            pos[name] = ((i + 0.5) * widest / len(names), float(tier))
    return pos


def _draw_links(ax, fabric: Fabric, pos, colours: _Colours) -> list[str]:
    """One segment per link; rates set the width (the fastest link is thickest). Returns the
    links' colours."""
    from matplotlib.collections import LineCollection

    fastest = max((l.gbps for l in fabric.links), default=1.0)
    segments, link_colours, widths = [], [], []
    for l in fabric.links:
        segments.append([pos[l.a], pos[l.b]])
        link_colours.append(colours.of(_link_key(fabric, l)))
        widths.append(0.5 + 1.3 * l.gbps / fastest)
    ax.add_collection(LineCollection(segments, colors=link_colours, linewidths=widths, alpha=0.75,
                                     zorder=1))
    return link_colours


def _draw_rows(ax, fabric: Fabric, rows, pos, widest: int, colours: _Colours) -> int:
    """Hosts and switches, named, with a label per row. Returns how many switches are shared."""
    shared_nodes = 0
    crowded = widest > CROWDED
    font = 7 if widest <= 16 else 6 if widest <= 32 else 5
    for tier, names in rows.items():
        xs = [pos[n][0] for n in names]
        if tier == 0:
            ax.scatter(xs, [0] * len(xs), marker="s", s=110 if widest <= 40 else 30,
                       c="#e8e8e8", edgecolors="black", linewidths=0.8, zorder=3)
        else:
            fills = [colours.of(_switch_key(fabric, n)) for n in names]
            shared_nodes += fills.count(SHARED)
            ax.scatter(xs, [tier] * len(xs), marker="o", s=150 if widest <= 40 else 60,
                       c=fills, edgecolors="black", linewidths=0.8, zorder=3)
        stagger = not crowded and _labels_collide(ax, names, font, widest)
        lines = max(n.count("\n") + 1 for n in names)     # a host box's name has two
        for k, (name, x) in enumerate(zip(names, xs)):
            below = tier == 0
            # every other name moved by its own height: neighbours' names never overlap
            lift = 9 + (font + 2) * lines * (k % 2 if stagger else 0)
            ax.annotate(name, (x, tier), xytext=(0, -lift if below else lift), textcoords="offset points",
                        ha="center", va="top" if below else "bottom", fontsize=font,
                        rotation=90 if crowded else 0, zorder=4)
        roles = sorted({fabric.switches[n].role for n in names}) if tier else []
        label = ROW_NAMES.get(tier, f"tier {tier}") + (f"\n({', '.join(roles)})" if roles else "")
        ax.text(-0.04 * widest - 0.3, tier, label, ha="right", va="center", fontsize=9,
                fontweight="bold")
    return shared_nodes


def _labels_collide(ax, names: list[str], font: float, widest: int) -> bool:
    """Whether two neighbours' names in a row, side by side, leave less than a fifth of the room
    between their nodes free (the names measured in points, as matplotlib sets them)."""
    from matplotlib.textpath import TextPath
    fig = ax.figure
    room = fig.get_figwidth() * 72 * ax.get_position().width / (widest + 0.04 * widest + 0.4)
    wide = [max(TextPath((0, 0), line, size=font).get_extents().width for line in n.splitlines())
            for n in names]
    return any((a + b) / 2 > 0.8 * room for a, b in zip(wide, wide[1:]))


def rate_text(gbps: float) -> str:
    """A link rate for the legend: 26.7G, 200G, 3,200G; never 3.2e+03G."""
    return f"{gbps:,.0f}G" if gbps >= 100 else f"{gbps:.3g}G"


def _legend(ax, fabric: Fabric, groups: dict[int, str], any_shared: bool) -> None:
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=PALETTE[g % len(PALETTE)], lw=2.5, label=groups[g])
               for g in sorted(groups)]
    if any_shared:
        handles.append(Line2D([], [], color=SHARED, lw=2.5, marker="o", markeredgecolor="black",
                              label="shared by all " + families.of(fabric).shared))
    handles.append(Line2D([], [], color="black", marker="s", ls="", markerfacecolor="#e8e8e8",
                          label="host (NIC ports = its links)"))
    handles.append(Line2D([], [], color="black", marker="o", ls="", markerfacecolor="white",
                          label="switch"))
    rates = sorted({l.gbps for l in fabric.links})
    if len(rates) > 1:
        handles.append(Line2D([], [], color="black", lw=0, label="thicker = faster: " +
                              ", ".join(rate_text(r) for r in rates)))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
              frameon=False)


def figure(fabric: Fabric):
    """The picture of `fabric` as a matplotlib Figure on an Agg canvas (what `draw` writes).

    Raises ParamError when the fabric has more than MAX_NODES hosts + switches.
    """
    nodes = len(fabric.hosts) + len(fabric.switches)
    if nodes > MAX_NODES:
        raise ParamError(f"{fabric.family} fabric has {nodes} hosts and switches: too large to "
                         f"draw (at most {MAX_NODES}); use smaller settings")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = _rows(fabric)
    box = _host_groups(rows[0], max((len(r) for t, r in rows.items() if t), default=1))
    rows[0] = list(dict.fromkeys(box[h] for h in rows[0]))
    widest = max(len(r) for r in rows.values())
    width = min(max(0.55 * widest + 2.0, 8.0), 40.0)
    height = 1.7 * len(rows) + 1.6
    pos = _positions(rows, widest)
    pos.update({h: pos[b] for h, b in box.items()})    # a host's links start at its box
    colours = _Colours()

    fig = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_axes([0.07, 0.04, 0.78, 0.80])
    ax.set_axis_off()
    link_colours = _draw_links(ax, fabric, pos, colours)
    shared_nodes = _draw_rows(ax, fabric, rows, pos, widest, colours)
    ax.set_xlim(-0.04 * widest - 0.3, widest + 0.1)
    pad = 0.55 if widest > CROWDED else 0.35     # room for the upright names
    ax.set_ylim(-pad, max(rows) + pad)
    _legend(ax, fabric, colours.groups, bool(shared_nodes) or SHARED in link_colours)

    fig.suptitle(_title(fabric, int(width * 11)), fontsize=10, x=0.07, ha="left", y=0.985)
    fig.text(0.07, 0.865, f"{len(fabric.hosts)} hosts, {len(fabric.nics())} NICs, "
             f"{len(fabric.switches)} switches, {len(fabric.links)} links",
             fontsize=8, color="#444444")
    return fig


def draw(fabric: Fabric, path) -> Path:
    """Write a PNG picture of `fabric` to `path` and return the path.

    Raises ParamError when the fabric has more than MAX_NODES hosts + switches.
    """
    fig = figure(fabric)
    path = Path(path)
    buffer = io.BytesIO()
    # the format follows the extension (the CLI allows png, svg, pdf); none: png
    fig.savefig(buffer, format=path.suffix.lstrip(".").lower() or "png", bbox_inches="tight",
                pad_inches=0.2)
    return files.write_file(path.parent, path.name, buffer.getvalue())   # atomic, no symlink
