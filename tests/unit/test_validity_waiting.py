"""Validity from the emulator's own waiting (testbed/measure/validity.py `rule`, testbed/measure/
waitlog.py): the rule's arithmetic on fake figures, a Judgement and a report applying it, the
log's merging of windows and its runs, on fake numbers. On this machine's kernel:
tests/integration/test_validity_waiting.py."""
import os

import pytest

import scenarios
from testbed.core import cpuwindow
from testbed.measure import validity, waitlog
from testbed.measure.validity import BUSY_LIMIT, WAIT_LIMIT, WAITING, rule
from testbed.measure.waiting import WaitReport
from testbed.scenario.base import INVALID, NOT_REPRODUCED, REPRODUCED, Judgement


def test_the_worst_waiting_decides_and_the_busy_fraction_is_only_reported():
    assert rule((1.0,), ("ovs-vswitchd", WAIT_LIMIT)).valid                  # a busy neighbour alone
    assert rule((1.0,), ("ovs-vswitchd", WAIT_LIMIT)).busy == 1.0
    check = rule((0.5,), ("ovs-vswitchd", 0.34))
    assert not check.valid and check.waited == ("ovs-vswitchd", 0.34)
    assert check.why.startswith("ovs-vswitchd waited 34% of the window")


def test_without_a_waiting_figure_the_busy_fraction_decides_as_before():
    assert rule((0.5, BUSY_LIMIT), None).valid
    assert not rule((0.5, 0.95), None).valid and "CPU 95% busy" in rule((0.95,), None).why
    assert rule((), None).valid and rule((), None).busy is None


def test_a_judgement_settles_with_the_waiting_and_keeps_the_judges_own_verdict():
    judged = Judgement(REPRODUCED, "e", "m", busy=[0.99])
    assert judged.verdict == INVALID                      # unmeasured waiting: the busy rule
    judged.settle(("controller", 0.05))
    assert judged.verdict == REPRODUCED and judged.cpu_busy == 0.99
    judged.settle(("iperf3 p0s0h1", 0.5))
    assert judged.verdict == INVALID and "iperf3 p0s0h1 waited 50%" in judged.validity.why
    refuted = Judgement(NOT_REPRODUCED, "e", "m", busy=[0.3], waited=("ovs-vswitchd", 0.01))
    assert refuted.verdict == NOT_REPRODUCED


def test_the_worst_waiting_is_read_from_a_runs_figures():
    assert validity.worst_waiting({WAITING: {"runs": [], "worst": ["ovs-vswitchd", 0.3]}}) == \
        ("ovs-vswitchd", 0.3)
    for figures in ({}, {WAITING: {"worst": None}}, {WAITING: {"worst": ["x"]}}, {WAITING: 3}, None):
        assert validity.worst_waiting(figures) is None


def recorded(busy: float, waited) -> dict:
    """disjoint-paths' figures of two rounds, with the waiting a run logs."""
    def mode(seconds):
        return {"completion_s": seconds, "connections_per_spine": {"s0": 2, "s1": 2}, "cpu_busy": busy}
    return {"rounds": [{"hashing": mode(2.0), "path-selection": mode(1.5)} for _ in range(2)],
            "setup": {}, WAITING: {"runs": [], "worst": waited}}


def test_a_report_names_the_process_that_waited_and_ignores_a_busy_neighbour():
    scenario = scenarios.get("disjoint-paths").configure({}, True)
    starved = scenario.report(recorded(0.6, ["ovs-vswitchd", 0.34]))
    assert starved.verdict == INVALID
    assert starved.headline.startswith("ovs-vswitchd waited 34% of the window")
    assert "invalid: ovs-vswitchd waited 34%" in starved.measured
    beside = scenario.report(recorded(1.0, ["ovs-vswitchd", 0.03]))
    assert beside.verdict == REPRODUCED and beside.figures[validity.JUDGED_BUSY] == 1.0
    assert beside.figures[WAITING]["worst"] == ["ovs-vswitchd", 0.03]


def report(window, **per):
    """A window's report whose processes each have one thread that waited per[name] of it."""
    return WaitReport(window, {name: {1: f * window} for name, f in per.items()})


def test_windows_merge_into_one_runs_figure_weighted_by_their_length():
    merged = waitlog.merge([report(1.0, a=0.5, b=0.1), report(3.0, a=0.1, c=0.4)])
    assert merged.window_s == 4.0
    assert merged.per_process == pytest.approx({"a": 0.2, "b": 0.025, "c": 0.3})   # (0.5 + 0.3) / 4, ...
    assert merged.worst == ("c", pytest.approx(0.3))
    assert waitlog.merge([]) is None
    pressured = waitlog.merge([WaitReport(1.0, {}, 0.2), WaitReport(1.0, {}, 0.4)])
    assert pressured.pressure == pytest.approx(0.3)
    assert waitlog.merge([WaitReport(1.0, {}, 0.2), WaitReport(1.0, {})]).pressure is None


def test_a_merged_run_reads_each_threads_waiting_over_all_its_windows():
    """A short window where one thread queued and another where a second did: each thread's
    seconds over the run, not each window's worst (which would count both)."""
    short = WaitReport(0.02, {"ovs": {1: 0.004, 2: 0.0}})     # 20% of its 20 ms
    long = WaitReport(0.38, {"ovs": {1: 0.0, 2: 0.004}})
    merged = waitlog.merge([short, long])
    assert short.worst == ("ovs", pytest.approx(0.2))
    assert merged.threads == {"ovs": {1: 0.004, 2: 0.004}}
    assert merged.worst == ("ovs", pytest.approx(0.01))      # 4 ms of 0.4 s


def test_the_summary_keeps_each_runs_worst_and_the_worst_of_all():
    out = waitlog.summary([report(2.0, a=0.1), report(1.0, b=0.3), WaitReport(1.0, {})])
    assert [r["worst"] for r in out["runs"]] == [["a", 0.1], ["b", 0.3], None]
    assert out["worst"] == ["b", 0.3]
    assert waitlog.summary([])["worst"] is None


def me():
    return {"this test": os.getpid()}, None


def test_a_run_is_its_windows_or_the_whole_call_and_a_lone_window_is_a_run():
    with waitlog.collecting(me) as log:
        with waitlog.run():                       # no window opened: the whole call
            pass
        with waitlog.run():
            with cpuwindow.moving():
                with cpuwindow.moving():          # the union: one window
                    pass
            with cpuwindow.moving():
                pass
        with cpuwindow.moving():                  # outside any call: a run of its own
            pass
    assert len(log.runs) == 3 and all("this test" in r.per_process for r in log.runs)
    assert log.figures()["worst"][0] == "this test"
    assert not cpuwindow._observers               # the observer left with the block
    with waitlog.run():                           # no scenario collecting: nothing logged
        pass
    assert len(log.runs) == 3


def test_a_run_that_skips_the_endpoints_reads_the_fabric_alone():
    """A fault scenario's timeline (validity.ENDPOINTS): iperf3's processes are not read, in the
    whole call or in its windows; the next run reads every process again."""
    def fabric():
        return {"ovs-vswitchd": os.getpid(), "iperf3 p0s0h1": os.getpid(),
                "iperf3 p0s0h1 #2": os.getpid(), "iperf3x": os.getpid()}, None

    assert list(waitlog.without(fabric()[0], validity.ENDPOINTS)) == ["ovs-vswitchd", "iperf3x"]
    with waitlog.collecting(fabric) as log:
        with waitlog.run(skip=validity.ENDPOINTS):
            pass
        with waitlog.run(skip=validity.ENDPOINTS):
            with cpuwindow.moving():
                pass
        with waitlog.run():
            pass
    assert [sorted(r.per_process) for r in log.runs] == [["iperf3x", "ovs-vswitchd"]] * 2 + \
        [sorted(fabric()[0])]


def test_endpoints_kept_up_when_their_baseline_carries_enough_of_the_line():
    line = 100.0
    assert validity.kept_up(validity.KEPT_UP * line, line)
    assert not validity.kept_up(validity.KEPT_UP * line - 0.1, line)


def test_the_limits_are_compared_in_validity_alone():
    import ast
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    for path in [*root.glob("testbed/**/*.py"), *root.glob("scenarios/**/*.py"), *root.glob("bench/*.py")]:
        if path.name == "validity.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                names = {getattr(n, "id", getattr(n, "attr", None)) for n in ast.walk(node)}
                assert not names & {"WAIT_LIMIT", "BUSY_LIMIT", "KEPT_UP"}, \
                    f"{path} applies the validity rule itself"


def test_a_core_pipeline_step_is_one_run_however_many_phases_it_has(monkeypatch):
    """Its phases (a few milliseconds each, some) are timed together: one run over their
    windows, like the step's busy fraction, not one run per phase."""
    from scenarios.claims.core_pipeline import pipeline_steps

    class Runner:
        def run_sends(self, sends):
            with cpuwindow.moving():
                pass
            return 0.01, []

    class Cpu:
        def busy(self, windows):
            assert len(windows) == 2
            return 0.5

    monkeypatch.setattr(pipeline_steps.job, "step", lambda fabric, placement, sizes: [["tp"], [], ["dp"]])
    steps = pipeline_steps.StepRunner.__new__(pipeline_steps.StepRunner)
    steps.emu, steps.runner, steps.sends = type("Emu", (), {"fabric": None})(), Runner(), list
    with waitlog.collecting(me) as log:
        assert steps.step("pp-across", None, Cpu()) == ([0.01, 0.0, 0.01], 0.5)
        steps.step("dp-across", None, Cpu())
    assert len(log.runs) == 2
