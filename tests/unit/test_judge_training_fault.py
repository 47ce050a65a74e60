"""training-fault (C17): its judge fed rank 0's step lines built by hand (a job through a fault
that goes on, one that fails at its collective timeout, one that stalls for the fault, one that
never reached the fault). The step lines' parsing: test_steps.py. No fabric."""
import pytest

import scenarios
from scenarios.claims.training_fault import TrainingKnobs, step_figures
from testbed.core.errors import ParamError
from testbed.scenario.base import INVALID, NOT_REPRODUCED, REPRODUCED

KNOBS = {"before": 2.0, "fault": 5.0, "after": 2.0, "timeout": 2.5, "compute": 0.1, "kind": "link"}
STEPS = 90
T_FAULT, T_REPAIR = 100.0, 105.0


def rows(steps: int, step_s: float = 0.11, fault_step_s: float | None = None,
         stall: float = 0.0) -> list:
    """`steps` steps, the 21st ending at T_FAULT; those ending during the fault take
    `fault_step_s`; the first to end after the fault began took `stall` s more."""
    out, t = [], T_FAULT - 20 * step_s
    for s in range(steps):
        d = step_s
        if t > T_FAULT and fault_step_s is not None and t - step_s < T_REPAIR:
            d = fault_step_s
        if stall and t > T_FAULT and not any(r[2] >= stall for r in out):
            d = stall
        t += d if s else 0
        out.append((s, round(t, 3), round(d, 3)))
    return out


def variant(rs: list, ok: bool, failed_after: float | None = None, busy: float = 0.6,
            injected: bool = True) -> dict:
    return {**step_figures(rs, T_FAULT if injected else None, T_REPAIR if injected else None),
            "steps": STEPS, "job_ok": ok, "job": "job train: ..." if ok else
            "job train: rank 0 (p0s0h0-n0) exited 1 after 30 s: RuntimeError: Timed out waiting",
            "done_all_ranks": len(rs), "fault_injected": injected, "fault_s": 5.0,
            "failed_after_fault_s": failed_after, "cpu_busy": busy, "target": "p0s0h0-n0p0"}


def figures(dual=None, single=None) -> dict:
    return {"dual_tor": dual or variant(rows(STEPS, fault_step_s=0.15), True),
            "single_tor": single or variant(rows(21), False, failed_after=3.5),
            "setup": {"knobs": KNOBS, "steps": STEPS, "fault_step": 20}, "series": {}}


def judged(figs):
    return scenarios.get("training-fault").judge(figs)


def test_step_figures_split_the_steps_at_the_fault():
    f = step_figures(rows(STEPS, fault_step_s=0.15), T_FAULT, T_REPAIR)
    assert f["done"] == STEPS and f["base_step_s"] == 0.11
    assert f["fault_median_step_s"] == f["fault_longest_step_s"] == 0.15
    assert f["steps_during_fault"] == pytest.approx(5 / 0.15, abs=2)


def test_dual_tor_goes_on_and_single_tor_fails_at_its_timeout():
    j = judged(figures())
    assert j.verdict == REPRODUCED, j.measured
    assert j.derived["dual_slowdown"] == pytest.approx(0.15 / 0.11, rel=0.01)
    assert "failed 3.5 s" in j.headline


def test_a_single_tor_job_that_stalls_for_the_fault_reproduces_too():
    single = variant(rows(STEPS, stall=4.9), True)
    assert judged(figures(single=single)).verdict == REPRODUCED


def test_a_single_tor_job_that_hardly_noticed_is_not_reproduced():
    single = variant(rows(STEPS, fault_step_s=0.2), True)
    assert judged(figures(single=single)).verdict == NOT_REPRODUCED


@pytest.mark.parametrize("dual", [
    variant(rows(40), False, failed_after=3.0),              # dual-ToR lost the job too
    variant(rows(STEPS, fault_step_s=0.3), True),            # slower than 2x during the fault
    variant(rows(STEPS, fault_step_s=0.15, stall=1.5), True),  # a step over half the timeout
], ids=["failed", "slowed", "stepped-long"])
def test_dual_tor_that_did_not_keep_the_job_going_is_not_reproduced(dual):
    assert judged(figures(dual=dual)).verdict == NOT_REPRODUCED


def test_a_job_that_ended_before_the_fault_gives_no_verdict():
    dual = variant(rows(3), False, injected=False)
    j = judged(figures(dual=dual))
    assert j.verdict == INVALID and "ended before the fault" in j.measured


def test_slow_steps_before_the_fault_or_a_busy_cpu_give_no_verdict():
    assert judged(figures(dual=variant(rows(STEPS, step_s=0.9), True))).verdict == INVALID
    busy = variant(rows(STEPS, fault_step_s=0.15), True, busy=0.95)
    assert judged(figures(dual=busy)).verdict == INVALID


@pytest.mark.parametrize("bad, why", [({"fault": 3.0}, "outlast"), ({"kind": "nic"}, "choose"),
                                      ({"compute": 1.0}, "quarter")])
def test_knobs_that_make_the_claim_meaningless_are_refused(bad, why):
    with pytest.raises(ParamError, match=why):
        TrainingKnobs(**{**KNOBS, **bad}).check()
