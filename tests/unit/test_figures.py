"""Every claim's figure, drawn from synthetic figures (tests/figure_results.py) without a fabric:
the paper's value is drawn on it (an artist with the gid plots.PAPER at that value, in the
figure's units), axes that count things have integer ticks, and no text is in scientific notation."""
import re
import statistics

import pytest

import scenarios
from testbed.scenario import plots
from tests import figure_results as F

SCIENTIFIC = re.compile(r"\d[eE][+-]?\d|\\times\s*10|×\s*10")
LOSS = 1 - 1 / 16            # HPN: one of a host's 16 ports lost


def mean(xs):
    return statistics.fmean(xs)


# the paper's values each figure must draw, from its synthetic figures: ("y", v) a level, ("x", v) a
# moment or a slowdown on the x axis, ("point", x, y) a point
PAPER = {
    "hash-polarization": lambda f: [("y", 95), ("y", 22)],
    "dual-plane-balance": lambda f: [("y", 75), ("y", 25), ("y", 50), ("y", 267), ("y", 3), ("y", 20)],
    "mpft-vs-mrft": lambda f: [("y", mean(f["mrft"]["busbw_mbit"]) * 272.80 / 272.52)],
    "node-limited-moe": lambda f: [("point", 4, 84), ("point", 8, 168)],
    "disjoint-paths": lambda f: [("y", mean([r["hashing"]["completion_s"] for r in f["rounds"]]) / 1.347)],
    "routing-policies": lambda f: [("y", f["static"]["mean_busbw_mbit"] * 97 / 190)],
    "dual-tor-link-failure": lambda f: [("y", f["dual_tor"]["baseline_mbps"] * LOSS), ("y", 0)],
    "link-flap": lambda f: [("y", 0), ("y", f["dual_tor"]["baseline_mbps"])],
    "one-way-fault": lambda f: [("y", 0)],
    "tor-failure": lambda f: [("y", f["dual_tor"]["p0s0h0"]["baseline_mbps"] * LOSS)],
    "segment-tor-failure": lambda f: [("y", f["dual_tor"]["baseline_mbps"] * LOSS)],
    "miswiring": lambda f: [("y", 12.0)],
    "segment-placement": lambda f: [("y", mean(f["levels"][-1]["inside"]["completion_s"]) * 1.593)],
    "core-pipeline": lambda f: [("y", mean(f["non-blocking"]["pp-across"]["step_s"]))],
    "rail-only": lambda f: [("y", 100), ("y", 0)],
    "roce-entropy": lambda f: [("y", 95), ("y", 22), ("y", 1 / 0.7)],
    "fast-uplinks": lambda f: [("x", 1.0)],
    "skeleton-probing": lambda f: [("y", 98.2), ("y", 99.3), ("y", 95.7)],
    "training-fault": lambda f: [("y", f["dual_tor"]["base_step_s"])],
}

# (scenario, panel, axis) of the axes that count things
COUNTING = [("skeleton-probing", 2, "x"), ("node-limited-moe", 0, "x")]


@pytest.fixture
def drawn(monkeypatch, tmp_path):
    """draw(name) -> the matplotlib Figure scenario `name` saved (its PNG written too)."""
    saved = []
    save = plots.save

    def keep(fig, path):
        saved.append(fig)
        save(fig, path)
    monkeypatch.setattr(plots, "save", keep)

    def draw(name):
        saved.clear()
        _, _, ok = F.draw(name, tmp_path / f"{name}.png")
        assert ok and len(saved) == 1 and (tmp_path / f"{name}.png").stat().st_size > 0
        return saved[0]
    return draw


def paper_marks(fig) -> list[tuple]:
    """Where the figure's paper artists are: ("y", v) for a level, ("x", v) for a vertical, both
    (and ("point", x, y)) for a point."""
    marks = []
    for ax in fig.axes:
        for line in ax.get_lines():
            if line.get_gid() != plots.PAPER:
                continue
            xs, ys = [float(v) for v in line.get_xdata()], [float(v) for v in line.get_ydata()]
            if len(set(ys)) == 1:
                marks.append(("y", ys[0]))
            if len(set(xs)) == 1:
                marks.append(("x", xs[0]))
            if len(xs) == 1:
                marks.append(("point", xs[0], ys[0]))
    return marks


def has(marks, want) -> bool:
    return any(m[0] == want[0] and len(m) == len(want) and all(a == pytest.approx(b, rel=1e-3, abs=1e-6)
                                                                 for a, b in zip(m[1:], want[1:]))
               for m in marks)


def test_every_claim_scenario_has_synthetic_figures_and_paper_values():
    assert set(F.BUILDERS) == set(scenarios.built_in()) == set(PAPER)


@pytest.mark.parametrize("name", sorted(PAPER))
def test_the_papers_value_is_drawn(drawn, name):
    marks = paper_marks(drawn(name))
    for want in PAPER[name](F.figures(name)):
        assert has(marks, want), f"{name}: no paper artist at {want}; drawn: {marks}"


@pytest.mark.parametrize("name", sorted(PAPER))
def test_no_text_in_scientific_notation(drawn, name):
    fig = drawn(name)
    texts = [t.get_text() for t in fig.texts] + [fig._suptitle.get_text()]
    for ax in fig.axes:
        texts += [t.get_text() for t in ax.texts + ax.get_xticklabels() + ax.get_yticklabels()]
        texts += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel(), ax.xaxis.get_offset_text().get_text(),
                  ax.yaxis.get_offset_text().get_text()]
        legend = ax.get_legend()
        texts += [t.get_text() for t in legend.get_texts()] if legend else []
    bad = [t for t in texts if SCIENTIFIC.search(t)]
    assert not bad, f"{name}: {bad}"


@pytest.mark.parametrize("name,panel,axis", COUNTING)
def test_axes_that_count_have_integer_ticks(drawn, name, panel, axis):
    ax = drawn(name).axes[panel]
    low, high = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    ticks = [t for t in (ax.get_xticks() if axis == "x" else ax.get_yticks()) if low <= t <= high]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks


def test_a_value_label_is_never_scientific_and_sits_above_its_error_bar():
    from matplotlib.figure import Figure
    assert plots.number(2800) == "2,800" and plots.number(0.5) == "0.5" and plots.number(0.001) == "0"
    ax = Figure().add_subplot()
    plots.bars(ax, ["a"], {"g": [[1.0, 3.0]]}, "unit")
    (label,) = [t for t in ax.texts if t.get_text() == "2"]
    assert label.xy[1] == 3.0 and label.get_position()[1] > 0       # at the top of the bar's range, above it


def test_a_name_keeps_its_colour_across_panels():
    from matplotlib.figure import Figure
    fig = Figure()
    left, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    plots.bars(left, ["a"], {"x": [[1]], "y": [[2]]}, "u", colours={"x": "tab:green", "y": "tab:red"})
    plots.bars(right, ["b"], {"y": [[2]], "x": [[1]]}, "u", colours={"x": "tab:green", "y": "tab:red"})
    colour = {ax: {c.get_label(): c.patches[0].get_facecolor() for c in ax.containers
                   if hasattr(c, "patches") and not c.get_label().startswith("_")} for ax in (left, right)}
    assert colour[left]["x"] == colour[right]["x"] and colour[left]["y"] == colour[right]["y"]


def test_the_fabric_pictures_legend_writes_rates_plainly():
    from testbed.model.draw import rate_text
    assert [rate_text(r) for r in (26.666, 200, 3000, 3200)] == ["26.7G", "200G", "3,000G", "3,200G"]


def test_the_fabric_pictures_tor_names_do_not_overlap(monkeypatch, tmp_path):
    """A segment of 16 ToRs side by side: every other name a line up, so that no two neighbours'
    names overlap (their extents, as drawn)."""
    from matplotlib.figure import Figure

    from testbed.model import draw as D
    from testbed.model import make_fabric
    figs = []
    savefig = Figure.savefig

    def keep(self, *args, **kwargs):
        figs.append(self)
        return savefig(self, *args, **kwargs)
    monkeypatch.setattr(Figure, "savefig", keep)
    D.draw(make_fabric("hpn", {"pods": 1, "hosts": 16, "nics": 8, "rails": 8}), tmp_path / "seg.png")
    (ax,) = figs[0].axes
    renderer = figs[0].canvas.get_renderer()
    tors = sorted((t for t in ax.texts if "r" in t.get_text() and "t" in t.get_text()[-2:]),
                  key=lambda t: t.xy[0])
    assert len(tors) == 16
    boxes = [t.get_window_extent(renderer) for t in tors]
    assert not any(a.overlaps(b) for a, b in zip(boxes, boxes[1:]))
