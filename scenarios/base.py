"""What every scenario is: a claim of the papers, reproduced at small scale, with a verdict.

A scenario subclasses Scenario, sets its claim and the paper's figure, and implements
`measure(quick)` returning a Result whose numbers were measured in that run. `execute` writes
RESULT.json and (if the scenario draws one) RESULT.png under the output directory.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPRODUCED, NOT_REPRODUCED, INVALID = "reproduced", "not reproduced", "invalid"


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


class Scenario:
    name = ""
    claim = ""
    title = ""
    paper = ""

    def measure(self, quick: bool) -> Result:
        raise NotImplementedError

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

    def execute(self, out: Path, quick: bool = False) -> Result:
        out.mkdir(parents=True, exist_ok=True)
        result = self.measure(quick)
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
