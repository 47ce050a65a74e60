"""What every scenario is: a claim of the papers, reproduced at small scale, with a verdict.

A scenario subclasses Scenario, names its claim and the paper's figure, and implements two steps:
- `run(quick)` brings the fabric up and measures: it returns the figures, a plain dict of the
  measured numbers, with the bring-ups under "setup" and the time series to plot under "series";
- `judge(figures)` is pure: it applies the scenario's thresholds to those figures and writes the
  prose (a Judgement). A recorded RESULT.json (figures plus setup) can be judged again.
`execute` runs both, builds the Result from the scenario's own attributes and writes RESULT.json
and (if the scenario draws one) RESULT.png under the output directory.

Parameters (testbed/scenario/knobs.py): a scenario names the fabric families it builds (`families`;
`--set` takes their parameters), the settings it starts from (`base`), the parameters it sets
itself (`fixed`, refused with the reason) and its own knobs (a Knobs dataclass). `configure`
checks them all, and `meaningful` whether the claim still means something with them, before
anything is built; the knobs are recorded in the setup, where the judge reads them back.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar

from testbed.core import files, progress
from testbed.core.errors import ParamError, PartLost
from testbed.measure import validity, waitlog
from testbed.scenario import knobs as knobs_module
from testbed.scenario.knobs import Knobs

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
    headline: str = ""          # the measured effect in a few words (the tour's summary)

    @property
    def source(self) -> str:
        return source(self.claim, self.paper)


def source(claim: str, paper: str) -> str:
    """What a run is held against, as its report and its figure say it: the paper's figure for
    a claim ("paper: ..."), the file itself for an experiment file ("experiment: TITLE (PATH)")."""
    return f"{'experiment' if claim == 'experiment' else 'paper'}: {paper}"


@dataclass
class Judgement:
    """What a scenario's pure judge() returns: the verdict, the expectation and what was
    measured in words, numbers it derived, and a few-word headline (the tour's table)."""
    verdict: str                # reproduced | not reproduced | invalid
    expectation: str
    measured: str
    derived: dict = field(default_factory=dict)   # numbers the judge computed (ratios...), reported too
    headline: str = ""          # the measured effect in a few words, e.g. "loss 25.1% (exp. 25.0%)"
    # the CPU busy fractions of the runs the verdict rests on, stated once, their busiest
    # reported (JUDGED_BUSY); with the emulator's worst waiting over the runs (`waited`, set by
    # Scenario.report from the run's log) the validity rule (testbed/measure/validity.py) turns
    # the verdict `invalid` when they say the emulator set what was measured
    busy: tuple[float, ...] = ()
    waited: tuple[str, float] | None = None

    def __post_init__(self):
        self.busy = tuple(self.busy)
        self.claimed = self.verdict        # the judge's own verdict, before the validity rule
        self.settle(self.waited)

    def settle(self, waited: tuple[str, float] | None) -> None:
        """Apply the validity rule with the emulator's worst waiting `waited` (None: unmeasured)."""
        self.waited = waited
        self.verdict = INVALID if not self.validity.valid else self.claimed

    @property
    def validity(self) -> validity.Validity:
        return validity.rule(self.busy, self.waited)

    @property
    def cpu_busy(self) -> float | None:
        """What the validity check read: the busiest of `busy` (None: the judge reads none)."""
        return self.validity.busy


class Scenario:
    """Subclass as `class X(Scenario, name="x-y", claim="C1", tour=True)`, with `title` and `paper`
    as attributes; `tour`: one of the headline scenarios `hpn-testbed run` runs."""
    name = ""
    claim = ""
    title = ""
    paper = ""
    tour = False
    families: ClassVar[tuple[str, ...]] = ()      # the fabric families it builds
    base: ClassVar[dict] = {}                     # their settings before the user's --set
    fixed: ClassVar[dict[str, str]] = {}          # fabric parameters it sets itself: key -> why
    # where its fabrics run, given to every make_emulation: none, this machine (`run --servers` sets it)
    servers: tuple[str, ...] = ()
    jobs_out: Path | None = None        # where a run's jobs keep their ranks' logs (execute sets it)
    Knobs: ClassVar[type[Knobs]] = Knobs          # its own parameters

    def __init_subclass__(cls, name: str = "", claim: str = "", tour: bool = False, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.name, cls.claim, cls.tour = name, claim, tour

    # ---- parameters ----
    def configure(self, settings: dict | None = None, quick: bool = False,
                  preset: str | None = None) -> Scenario:
        """Take `settings` ({key: value}: knobs and fabric parameters) and check them, the fabric
        models (built, pure) and the claim's meaning: ParamError before anything exists."""
        keys = knobs_module.fabric_keys(self.families)
        mine, fabric = knobs_module.split(settings or {}, self.Knobs, keys, self.fixed, self.name)
        self.quick = quick
        try:
            self.knobs = self.Knobs.make(mine, quick)
            self.settings = {**self.preset_settings(preset), **fabric}
            for family in self.families:
                self.fabric(family)        # ParamError from the model's own checks
        except ParamError as e:
            raise ParamError(f"{self.name}: {e}") from None
        self.meaningful()
        return self

    @classmethod
    def parameters(cls) -> set[str]:
        """Every key `configure` takes: its knobs and its fabrics' parameters but those it fixes."""
        return (set(cls.Knobs.names()) | knobs_module.fabric_keys(cls.families)) - set(cls.fixed)

    def preset_settings(self, preset: str | None) -> dict:
        """A --preset's settings (the family's presets) for the scenario's first family."""
        from testbed.model.families import get
        if preset and not self.families:
            raise ParamError(f"builds no fabric of its own: no preset {preset!r}")
        return get(self.families[0]).preset(preset) if preset else {}

    def fabric_settings(self, family: str) -> dict:
        """What the scenario's knobs set on `family` (e.g. NICs per host on two families alike)."""
        return {}

    def fabric(self, family: str | None = None, **overrides):
        """The fabric model: the scenario's base, then the user's settings, then `overrides`
        (what a variant of the scenario sets, e.g. single_tor)."""
        from testbed.model import make_fabric
        family = family or self.families[0]
        return make_fabric(family, {**self.base, **self.settings, **self.fabric_settings(family),
                                    **overrides})

    def meaningful(self) -> None:
        """Raise ParamError (one line: why) if the parameters make the claim meaningless."""

    def refuse(self, why: str):
        raise ParamError(f"{self.name}: {why}")

    def knobs_of(self, figures: dict) -> Knobs:
        """The knobs a run recorded in its setup (defaults for those it did not)."""
        recorded = figures.get("setup", {}).get("knobs", {})
        names = set(self.Knobs.names())
        return self.Knobs(**{k: tuple(v) if isinstance(v, list) else v
                             for k, v in recorded.items() if k in names})

    def ensure_configured(self, quick: bool) -> None:
        if not hasattr(self, "knobs"):
            self.configure({}, quick)

    # ---- the two steps ----
    def run(self, quick: bool) -> dict:
        """Bring up, measure: the figures (with "setup" and "series")."""
        raise NotImplementedError

    def judge(self, figures: dict) -> Judgement:
        """The verdict and prose for `figures`; no side effects."""
        raise NotImplementedError

    def report(self, figures: dict) -> Result:
        """The Result of a run: this scenario's claim and paper, judged from `figures`."""
        judged = self.judge(figures)
        judged.settle(validity.worst_waiting(figures))
        if judged.verdict == INVALID:      # say why, in measured, the headline and the figure
            judged = validity.explain(judged)
        measured = {k: v for k, v in figures.items() if k not in NOT_MEASURED}
        if judged.cpu_busy is not None:
            measured[validity.JUDGED_BUSY] = round(judged.cpu_busy, 3)
        return Result(self.name, self.claim, self.paper, judged.expectation, judged.measured,
                      judged.verdict, figures={**measured, **judged.derived},
                      setup=figures.get("setup", {}), series=figures.get("series", {}),
                      headline=judged.headline)

    def plot(self, result: Result, path: Path) -> bool:
        """Draw `result` to `path` (PNG); return False if this scenario has nothing to draw."""
        if not result.series:
            return False
        from testbed.scenario import plots
        fig, ax = plots.figure(self, result)
        for name, points in result.series.items():
            if points:
                xs, ys = zip(*points)
                ax.plot(xs, ys, label=name)
        ax.set_xlabel(result.setup.get("x_label", "time (s)"))
        ax.set_ylabel(result.setup.get("y_label", ""))
        ax.legend(fontsize="small")
        plots.save(fig, path)
        return True

    def lost(self, reason: str) -> Result:
        """The Result of a run that lost a part of its fabric: invalid, whatever it measured."""
        return Result(self.name, self.claim, self.paper, expectation="(not judged)",
                      measured=f"the run lost a part of its fabric: {reason}", verdict=INVALID,
                      figures={"lost": reason}, headline="lost a part of its fabric")

    def execute(self, out: Path, quick: bool = False, stem: str | None = None) -> Result:
        """Run, judge, write STEM.json and STEM.png (STEM: the scenario's name) under `out`."""
        self.ensure_configured(quick)
        stem = files.checked_name(stem or self.name, "report name")
        files.make_dirs(out)
        self.jobs_out = Path(out) / f"{stem}.jobs"
        try:
            with progress.phase("measuring"), waitlog.collecting() as waits:   # bring-ups: own phases
                figures = self.run(self.quick)
            figures[validity.WAITING] = waits.figures()
            figures.setdefault("setup", {}).update(knobs=asdict(self.knobs), settings=self.settings)
            result = self.report(figures)
        except PartLost as e:
            result = self.lost(str(e))
        png = out / f"{stem}.png"
        result.files["json"] = str(out / f"{stem}.json")
        files.write_json(out, f"{stem}.json", asdict(result), indent=2)   # kept if the plot fails
        with progress.phase("drawing the figure"):
            drawn = "lost" not in result.figures and self.plot(result, png)
        if drawn:
            result.files["png"] = str(png)
            files.write_json(out, f"{stem}.json", asdict(result), indent=2)
        else:       # an earlier run's figure would show a verdict this run did not reach
            png.unlink(missing_ok=True)
        return result

    def outputs(self, repeat: int = 1) -> list[str]:
        """The names of the files `execute` (and a repeat) writes, for the preflight."""
        stems = [self.name] if repeat == 1 else [f"{self.name}.run{k}" for k in range(1, repeat + 1)]
        return [f"{s}.{ext}" for s in stems for ext in ("json", "png")] + \
            ([f"{self.name}.repeat.json"] if repeat > 1 else [])


def verdict(ok: bool, valid: bool = True) -> str:
    """"reproduced" if `ok`, else "not reproduced"; "invalid" if the run was not `valid` (the
    CPU, not the fabric, set the rate)."""
    if not valid:
        return INVALID
    return REPRODUCED if ok else NOT_REPRODUCED
