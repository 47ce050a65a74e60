"""What every scenario is: a claim of the papers, reproduced at small scale, with a verdict.

A scenario subclasses Scenario, names its claim and the paper's figure, and implements two steps:
- `run(quick)` brings the fabric up and measures: it returns the figures, a plain dict of the
  measured numbers, with the bring-ups under "setup" and the time series to plot under "series";
- `judge(figures)` is pure: it applies the scenario's thresholds to those figures and writes the
  prose (a Judgement). A recorded RESULT.json (figures plus setup) can be judged again.
`execute` runs both, builds the Result from the scenario's own attributes and writes RESULT.json
and (if the scenario draws one) RESULT.png under the output directory.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from testbed.core.errors import PartLost

REPRODUCED, NOT_REPRODUCED, INVALID = "reproduced", "not reproduced", "invalid"
NOT_MEASURED = ("setup", "series")     # the keys of a run's figures that are not numbers to judge


@dataclass
class Result:
    scenario: str
    claim: str                  # e.g. "C2"
    paper: str                  # the paper's figure, as the paper states it
    expectation: str            # what the scaled-down theory predicts
    measured: str               # what this run measured, in words and numbers
    verdict: str                # reproduced | not reproduced | invalid (the emulator was the bottleneck)
    figures: dict = field(default_factory=dict)   # the numbers behind `measured`
    setup: dict = field(default_factory=dict)     # fabric, scale, datapath, bond, durations
    series: dict = field(default_factory=dict)    # time series for the plot (name -> [[t, y], ...])
    files: dict = field(default_factory=dict)


@dataclass
class Judgement:
    verdict: str                # reproduced | not reproduced | invalid
    expectation: str
    measured: str
    derived: dict = field(default_factory=dict)   # numbers the judge computed (ratios...), reported too


class Scenario:
    """Subclass as `class X(Scenario, name="x-y", claim="C1", tour=True)`, with `title` and `paper`
    as attributes; `tour`: one of the headline scenarios `hpn-testbed run` runs."""
    name = ""
    claim = ""
    title = ""
    paper = ""
    tour = False

    def __init_subclass__(cls, name: str = "", claim: str = "", tour: bool = False, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.name, cls.claim, cls.tour = name, claim, tour

    def run(self, quick: bool) -> dict:
        """Bring up, measure: the figures (with "setup" and "series")."""
        raise NotImplementedError

    def judge(self, figures: dict) -> Judgement:
        """The verdict and prose for `figures`; no side effects."""
        raise NotImplementedError

    def report(self, figures: dict) -> Result:
        """The Result of a run: this scenario's claim and paper, judged from `figures`."""
        judged = self.judge(figures)
        measured = {k: v for k, v in figures.items() if k not in NOT_MEASURED}
        return Result(self.name, self.claim, self.paper, judged.expectation, judged.measured,
                      judged.verdict, figures={**measured, **judged.derived},
                      setup=figures.get("setup", {}), series=figures.get("series", {}))

    def plot(self, result: Result, path: Path) -> bool:
        """Draw `result` to `path` (PNG); return False if this scenario has nothing to draw."""
        if not result.series:
            return False
        from matplotlib.figure import Figure
        fig = Figure(figsize=(8, 4.5))
        ax = fig.add_subplot()
        for name, points in result.series.items():
            if points:
                xs, ys = zip(*points)
                ax.plot(xs, ys, label=name)
        ax.set_title(f"{result.claim} {self.title}: {result.verdict}")
        ax.set_xlabel(result.setup.get("x_label", "time (s)"))
        ax.set_ylabel(result.setup.get("y_label", ""))
        ax.legend(fontsize="small")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        return True

    def lost(self, reason: str) -> Result:
        """The Result of a run that lost a part of its fabric: invalid, whatever it measured."""
        return Result(self.name, self.claim, self.paper, expectation="(not judged)",
                      measured=f"the run lost a part of its fabric: {reason}", verdict=INVALID,
                      figures={"lost": reason})

    def execute(self, out: Path, quick: bool = False) -> Result:
        out.mkdir(parents=True, exist_ok=True)
        try:
            result = self.report(self.run(quick))
        except PartLost as e:
            result = self.lost(str(e))
        png = out / f"{self.name}.png"
        if self.plot(result, png):
            result.files["png"] = str(png)
        result.files["json"] = str(out / f"{self.name}.json")
        (out / f"{self.name}.json").write_text(json.dumps(asdict(result), indent=2, default=str))
        return result


def verdict(ok: bool, valid: bool = True) -> str:
    if not valid:
        return INVALID
    return REPRODUCED if ok else NOT_REPRODUCED
