"""A training job's step lines read (testbed/workload/steps.py) and set phase by phase on an
experiment's fault timeline: the pure function, then the experiment runner's figures, text and plot
fed a job directory written by hand. No fabric."""
from pathlib import Path

import pytest

from testbed.experiments import check
from testbed.experiments.runner import Experiment
from testbed.workload.steps import in_phase, phase_steps, steps_of

JOB = ('[fabric]\nfamily = "hpn"\n[[job]]\nname = "train"\ncommand = "{python} x.py"\nrails = [0]\n'
       '[[fault]]\nkind = "link-down"\nat = 5\nfor = 5\nport = "p0s0h0-n0p0"\n[measure]\nwarm = 1\n')
FAULT = "fault 1 (link-down p0s0h0-n0p0)"
SPANS = [("before", 1.0, 5.0), (FAULT, 6.0, 10.0), ("after", 11.0, 14.0)]
T0 = 1000.0         # the traffic's start on CLOCK_MONOTONIC


def test_step_lines_are_parsed_and_other_lines_skipped():
    text = ("# training: 2 ranks\nstep 0 81.5 0.128 35.8\nstep 1 81.6 0.104 24.9\nwarning: x\n"
            "step 2 oops 0.1 1\nstep 3 81.7\nsteps 4 81.8 0.1 1\n")
    assert steps_of(text) == [(0, 81.5, 0.128), (1, 81.6, 0.104)]
    assert steps_of("") == [] and steps_of("allreduce 4096 1024 10.5 3.2 4.8\n") == []


def test_a_step_belongs_to_each_phase_its_span_overlaps():
    assert in_phase((0, 4.0, 1.0), 1.0, 5.0)                  # [3, 4] inside
    assert in_phase((0, 6.0, 2.0), 1.0, 5.0)                  # [4, 6]: began before the phase ended
    assert not in_phase((0, 6.0, 1.0), 1.0, 5.0)              # [5, 6] only touches its end
    assert not in_phase((0, 1.0, 0.5), 1.0, 5.0)              # [0.5, 1] only touches its start
    assert in_phase((0, T0 + 4.0, 1.0), 1.0, 5.0, offset=T0)  # shifted onto the run's clock


def test_each_phase_has_its_steps_count_and_median():
    """Steps of 0.5 s before the fault, one step stretched across it (6.5 s: it began in `before`
    and ended in `after`, so it counts in all three), then 0.5 s again; no step overlaps a phase
    that ends before the job began."""
    rows = [(k, T0 + 2.0 + 0.5 * k, 0.5) for k in range(1, 5)]          # ends at 2.5 .. 4.0
    rows += [(5, T0 + 11.5, 7.5)]                                         # [4.0, 11.5]
    rows += [(k, T0 + 11.5 + 0.5 * (k - 5), 0.5) for k in range(6, 9)]  # ends at 12 .. 13
    spans = [("early", 0.0, 2.0)] + SPANS
    f = phase_steps(rows, spans, offset=T0)
    assert f["counts"] == {"early": 0, "before": 5, FAULT: 1, "after": 4}
    assert f["phases_s"] == {"early": None, "before": 0.5, FAULT: 7.5, "after": 0.5}
    assert f["done"] == 8
    assert phase_steps([], SPANS)["phases_s"] == {"before": None, FAULT: None, "after": None}


def write(tmp_path, text: str) -> Path:
    path = tmp_path / "x.toml"
    path.write_text(text)
    return path


def job_directory(tmp_path: Path, text: str | None) -> Path:
    """A job's directory as run_job leaves it: rank 0's output, or none."""
    directory = tmp_path / "train"
    directory.mkdir()
    if text is not None:
        (directory / "rank0.out").write_text(text)
    return directory


def run_figures(tmp_path, rank0: str | None) -> tuple[Experiment, dict]:
    """The runner's figures for a run of JOB whose job wrote `rank0` (nothing watched, so no
    sampler is read)."""
    experiment = Experiment(check.load(str(write(tmp_path, JOB))))
    directory = job_directory(tmp_path, rank0)
    job = {"type": "job", "where": "[[job]] 1", "job": "train", "ok": True, "line": "job train: ok",
           "seconds": 14.0, "directory": str(directory), "ranks": [], "rows": []}
    figures = experiment.figures([], (None, None), None, T0, 14.0, [job], 0.3, {})
    return experiment, figures


def steps_text(ends_and_durations) -> str:
    return "# training: 2 ranks\n" + "".join(f"step {k} {T0 + t:.3f} {d:.3f} 1.0\n"
                                             for k, (t, d) in enumerate(ends_and_durations))


def test_the_runner_sets_a_jobs_steps_on_the_fault_timeline(tmp_path):
    rank0 = steps_text([(2.0, 0.2), (3.0, 0.2), (4.0, 0.2), (7.0, 0.6), (8.0, 0.6), (12.0, 0.2)])
    experiment, figures = run_figures(tmp_path, rank0)
    assert [p[0] for p in figures["phases"]] == ["before", FAULT, "after"]
    (job,) = figures["traffic"]
    assert job["steps"] == {"phases_s": {"before": 0.2, FAULT: 0.6, "after": 0.2},
                            "counts": {"before": 3, FAULT: 2, "after": 1}, "done": 6}
    assert figures["series"]["job train step time (s)"] == [
        [2.0, 0.2], [3.0, 0.2], [4.0, 0.2], [7.0, 0.6], [8.0, 0.6], [12.0, 0.2]]
    judged = experiment.judge(figures)
    assert (f"job train: ok; job train step s (rank 0, median): before 0.2 (3 steps), {FAULT} 0.6 "
            "(2 steps), after 0.2 (1 steps)") in judged.measured


@pytest.mark.parametrize("rank0", [None, "# allreduce\nallreduce 4096 1024 10.5 3.2 4.8\n"])
def test_a_job_without_steps_changes_nothing(tmp_path, rank0):
    experiment, figures = run_figures(tmp_path, rank0)
    (job,) = figures["traffic"]
    assert "steps" not in job and figures["series"] == {}
    assert "step s" not in experiment.judge(figures).measured


def test_the_plot_draws_step_times_on_a_panel_of_their_own(tmp_path, monkeypatch):
    from testbed.scenario import plots
    rank0 = steps_text([(2.0, 0.2), (7.0, 0.6), (12.0, 0.2)])
    experiment, figures = run_figures(tmp_path, rank0)
    figures["series"]["p0s0h0-n0 sent (Mbit/s)"] = [[1.0, 2.0], [2.0, 2.5]]
    drawn = {}
    monkeypatch.setattr(plots, "save", lambda fig, path: drawn.setdefault("fig", fig))
    assert experiment.plot(experiment.report(figures), tmp_path / "x.png")
    axes = drawn["fig"].axes
    assert [ax.get_ylabel() for ax in axes] == ["Mbit/s", "step time (s)"]
    assert [line.get_label() for line in axes[1].get_lines()] == ["job train step time (s)"]
    assert "job train step time (s)" not in [line.get_label() for line in axes[0].get_lines()]
    assert axes[1].get_xlim() == axes[0].get_xlim()      # one time axis for rates and steps,
    assert axes[0].get_xlim()[0] <= 1.0 and axes[0].get_xlim()[1] >= 12.0   # over both
