"""The pictures the scenarios draw, in the papers' forms: grouped bars (with each round's value as a
dot and its range as an error bar) and time series with the fault's window shaded.

Every figure's title carries the claim, the scenario's title and the verdict with its headline;
every claim's figure marks the paper's value in its own units (`paper_value`, `paper_point`: the
artists carry the gid PAPER), so a reader sees the run against the paper, not only in the footer.
The rules every figure keeps live here: a colour means one thing in a figure (`bars` and `lines`
take the colour of each name), an axis that counts things has integer ticks (`counts`), and no
number is written in scientific notation (`number`, and `save` makes every axis plain).
"""
from __future__ import annotations

import statistics
from pathlib import Path

COLOURS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]
VERDICT_COLOUR = {"reproduced": "darkgreen", "invalid": "darkgoldenrod", "measured": "navy"}
PAPER = "paper"          # the gid of every artist that marks the paper's value
PAPER_STYLES = ["--", ":", "-.", (0, (5, 2, 1, 2))]     # a panel's several paper lines, told apart


def number(value: float) -> str:
    """A value label: three significant digits, thousands with separators, never 2.8e+03."""
    if abs(value) < 0.01:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def paper_label(label: str | None) -> str:
    """A paper value's legend entry, "paper: ..." ("_nolegend_" for None)."""
    if label is None:
        return "_nolegend_"
    return label if label.startswith("paper") else f"paper: {label}"


def paper_value(ax, value: float, label: str | None, axis: str = "y", span: tuple | None = None,
                colour: str = "black", style: int = 0) -> None:
    """The paper's value on `ax`, in the panel's units: a line at `value` on `axis` ("y": a
    horizontal line, "x": a vertical one) across the panel, or across `span` (low, high) of the
    other axis (e.g. over one bar); labelled "paper: ..." in the legend. `style` picks one of
    PAPER_STYLES, so that a panel's several paper values are told apart; label None: no legend
    entry (the same value drawn again over another bar)."""
    dash = PAPER_STYLES[style % len(PAPER_STYLES)]
    text = paper_label(label)
    kw = {"ls": dash, "lw": 1.3, "color": colour, "label": text, "gid": PAPER, "zorder": 4}
    if span is None:
        (ax.axhline if axis == "y" else ax.axvline)(value, **kw)
    elif axis == "y":
        ax.plot(span, [value, value], **kw)
    else:
        ax.plot([value, value], span, **kw)


def paper_point(ax, x: float, y: float, label: str | None, colour: str = "black",
                marker: str = "*") -> None:
    """The paper's value as a point (x, y) in the panel's units (label None: no legend entry)."""
    text = paper_label(label)
    ax.plot([x], [y], marker, color=colour, markersize=14, markerfacecolor="none", markeredgewidth=1.4,
            label=text, gid=PAPER, zorder=5, ls="none")       # hollow: the measured point shows through


def counts(ax, axis: str = "y") -> None:
    """An axis that counts things (faults, flows, nodes): integer ticks only."""
    from matplotlib.ticker import MaxNLocator
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_locator(MaxNLocator(integer=True))


def plain(ax) -> None:
    """No offset and no scientific notation on the axis' numbers (1e6 or +2.8e3 above the axis)."""
    from matplotlib.ticker import ScalarFormatter
    for which in (ax.xaxis, ax.yaxis):
        formatter = which.get_major_formatter()
        if isinstance(formatter, ScalarFormatter):
            formatter.set_scientific(False)
            formatter.set_useOffset(False)


def figure(scenario, result, ncols: int = 1, size=(8, 4.5)):
    """A figure of `ncols` panels titled with the claim and the verdict: (fig, ax or [axes])."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=size)
    axes = [fig.add_subplot(1, ncols, k + 1) for k in range(ncols)]
    head = f"{result.claim} {scenario.title}"
    verdict = result.verdict + (f": {result.headline}" if result.headline else "")
    fig.suptitle(f"{head}\n{verdict}", fontsize=10,
                 color=VERDICT_COLOUR.get(result.verdict, "darkred"))
    for ax in axes:
        ax.grid(alpha=0.3)
    paper(fig, result.source)
    return fig, (axes[0] if ncols == 1 else axes)


def paper(fig, text: str) -> None:
    """The paper's statement (its value) under the panels, small, wrapped to the figure's width;
    save() leaves room for it."""
    import textwrap
    wrapped = textwrap.fill(text, int(fig.get_figwidth() * 15))
    fig.text(0.01, 0.01, wrapped, fontsize=7, color="#333333", va="bottom", ha="left")
    fig._paper_lines = wrapped.count("\n") + 1


def mark(ax, x: float, label: str, colour: str = "black") -> None:
    """A moment on the time axis (e.g. when the detector took the port out), dotted."""
    ax.axvline(x, ls=":", lw=1.2, color=colour, label=label)


def note(ax, text: str) -> None:
    """A boxed note right of the panel, under its legend: the paper's value beside this run's."""
    ax.text(1.01, 0.0, text, transform=ax.transAxes, fontsize=7.5, ha="left", va="bottom",
            bbox={"boxstyle": "round", "facecolor": "lightyellow", "alpha": 0.9, "lw": 0.5})


def save(fig, path: Path) -> None:
    """Render the PNG in memory, then write it through testbed.core.files (atomic, no symlink)."""
    import io

    from testbed.core import files
    for ax in fig.axes:
        plain(ax)
    footer = getattr(fig, "_paper_lines", 0) * 0.12 / fig.get_figheight()   # inches of 7 pt text
    fig.tight_layout(rect=(0, footer + 0.01 if footer else 0, 1, 1))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    files.write_file(Path(path).parent, Path(path).name, buffer.getvalue())


def shade(ax, start: float, end: float, label: str | None = None, colour: str = "tab:red") -> None:
    """The window of a fault, shaded."""
    ax.axvspan(start, end, color=colour, alpha=0.12, label=label, lw=0)


def lines(ax, series: dict, colours: list[str] | None = None, **style) -> None:
    """Each named [[x, y], ...] series as a line (a name starting with _ stays out of the legend),
    the k-th in `colours[k]` (default COLOURS)."""
    colours = colours or COLOURS
    for k, (name, points) in enumerate(series.items()):
        if points:
            xs, ys = zip(*points)
            ax.plot(xs, ys, label=name, color=colours[k % len(colours)], **style)


def bar_x(category: int, group: int, groups: int) -> float:
    """Where bars() puts group `group`'s bar (of `groups`) in category `category`."""
    return category + (group - (groups - 1) / 2) * 0.8 / max(groups, 1)


def bar_span(category: int, group: int, groups: int) -> tuple[float, float]:
    """The x range of that bar: a paper value drawn over one bar only."""
    x, half = bar_x(category, group, groups), 0.4 / max(groups, 1)
    return (x - half, x + half)


def bars(ax, categories: list[str], groups: dict[str, list[list[float]]], unit: str,
         annotate: bool = True, colours: dict[str, str] | None = None) -> None:
    """Grouped bars: for each group (a legend entry) and category (an x tick), the mean of its
    values, an error bar from their lowest to highest, and each value as a dot; the mean written
    above the error bar. `colours`: a group's colour (name -> colour; default COLOURS in order),
    so that a colour means the same thing in every panel of a figure."""
    n = len(groups)
    width = 0.8 / max(n, 1)
    for g, (name, per_category) in enumerate(groups.items()):
        colour = (colours or {}).get(name, COLOURS[g % len(COLOURS)])
        for c, values in enumerate(per_category):
            if not values:
                continue
            x = bar_x(c, g, n)
            mean = statistics.fmean(values)
            low, high = mean - min(values), max(values) - mean
            ax.bar(x, mean, width * 0.9, color=colour, label=name if c == 0 else None,
                   yerr=[[low], [high]] if len(values) > 1 else None, capsize=3, alpha=0.85)
            if len(values) > 1:
                ax.scatter([x] * len(values), values, s=9, color="black", zorder=3)
            if annotate:       # above the error bar's cap, clear of it
                ax.annotate(number(mean), (x, max(values)), ha="center", va="bottom", fontsize=7,
                            xytext=(0, 4), textcoords="offset points", zorder=6,
                            bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.7})
    ax.set_xticks(range(len(categories)), categories, fontsize=8)
    ax.set_ylabel(unit)
    ax.margins(y=0.12)         # room above the tallest error bar for its label
    ax.legend(fontsize="small")


def moving_mean(points: list, n: int) -> list:
    """Each point's value averaged with its n // 2 neighbours on either side (centred)."""
    out = []
    for k, (t, _) in enumerate(points):
        window = points[max(0, k - n // 2):k + n // 2 + 1]
        out.append([t, sum(v for _, v in window) / len(window)])
    return out


def fault_timeline(scenario, result, path: Path, windows: list[tuple[float, float]], window_label: str,
                   levels: dict[str, float] | None = None, smooth: int = 1,
                   unmeasured: list[tuple[float, float]] = (), marks: dict[str, float] | None = None,
                   noted: str = "", paper: dict | None = None, y_label: str | None = None) -> bool:
    """The series of a fault run over time, each fault window shaded, and the levels the theory
    expects (name -> y) as dashed lines over the fault; `smooth` > 1: a moving mean of that many;
    `unmeasured`: stretches the judgement leaves out (the datapath paused), shaded grey; `marks`:
    moments (name -> x), dotted; `noted`: a boxed note (the paper's value beside this run's);
    `paper`: the paper's values (label -> y over the fault, or (y, (x0, x1)) over x0..x1), in black;
    `y_label`: the y axis' label (default: the one the run recorded in its setup)."""
    if not any(result.series.values()):
        return False
    fig, ax = figure(scenario, result)
    for k, (start, end) in enumerate(windows):
        shade(ax, start, end, window_label if k == 0 else None)
    for k, (start, end) in enumerate(unmeasured):
        shade(ax, start, end, "not measured (the datapath paused)" if k == 0 else None, colour="grey")
    if smooth > 1:      # the samples faintly, their moving mean plainly
        ax.set_title(f"faint: the samples; solid: their {smooth}-sample moving mean", fontsize=8)
        lines(ax, {f"_{name}": points for name, points in result.series.items()}, alpha=0.3)
        lines(ax, {name: moving_mean(points, smooth) for name, points in result.series.items()})
    else:
        lines(ax, result.series)
    start, end = min(w[0] for w in windows), max(w[1] for w in windows)
    for k, (name, y) in enumerate((levels or {}).items()):     # what the theory expects during the fault
        ax.hlines(y, start, end, ls="--", lw=1.2, color=COLOURS[k % len(COLOURS)], label=name)
    for k, (name, value) in enumerate((paper or {}).items()):
        y, span = value if isinstance(value, tuple) else (value, (start, end))
        paper_value(ax, y, name, span=span, style=k)
    for name, x in (marks or {}).items():
        mark(ax, x, name, colour="dimgrey")
    if noted:
        note(ax, noted)
    ax.set_xlabel(result.setup.get("x_label", "time (s)"))
    ax.set_ylabel(y_label or result.setup.get("y_label", ""))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    save(fig, path)
    return True
