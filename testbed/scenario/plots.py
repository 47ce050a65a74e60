"""The pictures the scenarios draw, in the papers' forms: grouped bars (with each round's value as a
dot and its range as an error bar) and time series with the fault's window shaded.

Every figure's title carries the claim, the scenario's title and the verdict with its headline.
"""
from __future__ import annotations

import statistics
from pathlib import Path

COLOURS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]
VERDICT_COLOUR = {"reproduced": "darkgreen", "invalid": "darkgoldenrod", "measured": "navy"}


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
    footer = getattr(fig, "_paper_lines", 0) * 0.12 / fig.get_figheight()   # inches of 7 pt text
    fig.tight_layout(rect=(0, footer + 0.01 if footer else 0, 1, 1))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    files.write_file(Path(path).parent, Path(path).name, buffer.getvalue())


def shade(ax, start: float, end: float, label: str | None = None, colour: str = "tab:red") -> None:
    """The window of a fault, shaded."""
    ax.axvspan(start, end, color=colour, alpha=0.12, label=label, lw=0)


def lines(ax, series: dict, **style) -> None:
    """Each named [[x, y], ...] series as a line (a name starting with _ stays out of the legend)."""
    for k, (name, points) in enumerate(series.items()):
        if points:
            xs, ys = zip(*points)
            ax.plot(xs, ys, label=name, color=COLOURS[k % len(COLOURS)], **style)


def bars(ax, categories: list[str], groups: dict[str, list[list[float]]], unit: str,
         annotate: bool = True) -> None:
    """Grouped bars: for each group (a legend entry) and category (an x tick), the mean of its
    values, an error bar from their lowest to highest, and each value as a dot."""
    n = len(groups)
    width = 0.8 / max(n, 1)
    for g, (name, per_category) in enumerate(groups.items()):
        colour = COLOURS[g % len(COLOURS)]
        for c, values in enumerate(per_category):
            if not values:
                continue
            x = c + (g - (n - 1) / 2) * width
            mean = statistics.fmean(values)
            low, high = mean - min(values), max(values) - mean
            ax.bar(x, mean, width * 0.9, color=colour, label=name if c == 0 else None,
                   yerr=[[low], [high]] if len(values) > 1 else None, capsize=3, alpha=0.85)
            if len(values) > 1:
                ax.scatter([x] * len(values), values, s=9, color="black", zorder=3)
            if annotate:
                ax.annotate(f"{mean:.3g}" if abs(mean) >= 0.01 else "0", (x, max(values)), ha="center",
                            va="bottom", fontsize=7, xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(range(len(categories)), categories, fontsize=8)
    ax.set_ylabel(unit)
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
                   noted: str = "") -> bool:
    """The series of a fault run over time, each fault window shaded, and the levels the theory
    expects (name -> y) as dashed lines over the fault; `smooth` > 1: a moving mean of that many;
    `unmeasured`: stretches the judgement leaves out (the datapath paused), shaded grey; `marks`:
    moments (name -> x), dotted; `noted`: a boxed note (the paper's value beside this run's)."""
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
    for name, x in (marks or {}).items():
        mark(ax, x, name)
    if noted:
        note(ax, noted)
    ax.set_xlabel(result.setup.get("x_label", "time (s)"))
    ax.set_ylabel(result.setup.get("y_label", ""))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    save(fig, path)
    return True
