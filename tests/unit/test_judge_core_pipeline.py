"""core-pipeline (C8): its judge fed figures a quick run measured here, its job's bytes and the
fluid model's predictions, and the parameters it refuses. No fabric, no root."""
import copy

import pytest

from scenarios.claims.core_pipeline import CorePipeline, judge_fault
from scenarios.claims.core_pipeline import pipeline_job as job
from testbed.core.errors import ParamError
from testbed.model import make_fabric
from testbed.scenario.base import INVALID, NOT_REPRODUCED, REPRODUCED
from testbed.workload.hashports import in_turns


def placement(steps, busy, predicted, pp_s=0.03, core_phases=("PP",)):
    """A placement's figures: each step TP 0.01 s, PP `pp_s`, DP the rest."""
    phases = [[0.01, pp_s, round(s - 0.01 - pp_s, 4)] for s in steps]
    return {"step_s": steps, "best_s": min(steps), "median_s": sorted(steps)[1], "cpu_busy": busy,
            "best_cpu_busy": busy[steps.index(min(steps))], "predicted": {"step_s": predicted},
            "phases_s": phases, "best_phases_s": [min(p) for p in zip(*phases)],
            "core_phases": list(core_phases)}


def recorded():
    """A quick run's figures (trimmed to what the judge reads)."""
    trace = [[round(0.01 + 0.255 * k, 2), 3 if 7 <= k <= 14 else 4] for k in range(21)]
    return {
        "sizes": {"tp": 35000, "pp": 375, "dp": 343750},
        "oversubscribed": {"core_oversubscription": 15.0,
                           "pp-across": placement([0.4097, 0.4056, 0.3717], [0.784, 0.743, 0.704], 0.3101),
                           "dp-across": placement([4.9118, 5.0176, 5.0608], [0.46, 0.388, 0.571], 4.1253)},
        "non-blocking": {"core_oversubscription": 1.0,
                         "pp-across": placement([0.3826, 0.4281, 0.4069], [0.725, 0.734, 0.752], 0.3059),
                         "dp-across": placement([0.4229, 0.4527, 0.4687], [0.744, 0.883, 0.718], 0.3059)},
        "fault": {"core": "c0", "in_port": 2, "port_j": 4, "paired_port": 4, "stream_mbps": 0.533,
                  "ports": {"3": {"to": "p1a0n0", "before": 0.002, "during": 0.593, "after": 0.001},
                            "4": {"to": "p1a1n0", "before": 0.516, "during": 0.0, "after": 0.664}},
                  "t_fault": 1.7, "t_repair": 3.7, "t_end": 5.14, "trace": trace,
                  "flow": "tcp 10.0.0.1:47000 -> 10.0.1.1:5299 (p0s0h0-n0 -> p1s0h0-n0)"},
        "fault_cpu_busy": 0.283,
        "setup": {"rounds": 3, "divisor": 16000.0}, "series": {}}


def judged(figures):
    return CorePipeline().judge(figures)


def test_a_quick_run_reproduces():
    j = judged(recorded())
    assert j.verdict == REPRODUCED, j.measured
    assert j.derived["dp_over_pp_across"] == pytest.approx(13.2, abs=0.05)
    assert "13.2x" in j.headline and "traced" in j.headline


def test_a_core_that_slows_the_pipeline_placement_is_not_reproduced():
    f = recorded()
    f["oversubscribed"]["pp-across"] = placement([0.61, 0.65, 0.6], [0.7, 0.7, 0.7], 0.3101, pp_s=0.25)
    assert judged(f).verdict == NOT_REPRODUCED


def test_the_cost_is_what_the_phases_across_the_core_add():
    """Whole steps 10% apart from the in-pod DP phase alone: the core cost nothing; PP 0.04 s
    slower on 15:1 over a 0.4 s step: +10%, whatever the DP phases did."""
    f = recorded()
    f["oversubscribed"]["pp-across"] = placement([0.36, 0.37, 0.38], [0.7] * 3, 0.3101)
    f["non-blocking"]["pp-across"] = placement([0.40, 0.41, 0.42], [0.7] * 3, 0.3059)
    j = judged(f)
    assert j.derived["pp_across_core_cost"] == pytest.approx(0.0)
    assert j.derived["pp_across_whole_step_cost"] == pytest.approx(-0.1)
    assert j.verdict == REPRODUCED, j.measured
    f["oversubscribed"]["pp-across"] = placement([0.36, 0.37, 0.38], [0.7] * 3, 0.3101, pp_s=0.07)
    assert judged(f).derived["pp_across_core_cost"] == pytest.approx(0.1)


def test_dp_across_without_a_core_bottleneck_is_not_reproduced():
    f = recorded()
    f["oversubscribed"]["dp-across"] = placement([0.45, 0.47, 0.5], [0.7, 0.7, 0.7], 4.1253)
    assert judged(f).verdict == NOT_REPRODUCED


@pytest.mark.parametrize("change", ["stays on j", "never back", "j not paired", "stream lost",
                                    "away from its pod"])
def test_a_failover_that_is_not_per_port_then_hash_is_not_reproduced(change):
    f = recorded()
    fault = f["fault"]
    if change == "stays on j":          # a trace that never left j: no fallback
        fault["trace"] = [[t, 4] for t, _ in fault["trace"]]
    elif change == "never back":
        fault["trace"] = [[t, 3 if t > 1.7 else 4] for t, _ in fault["trace"]]
    elif change == "j not paired":      # hashing, not the per-port rule, chose j
        fault["paired_port"] = 3
    elif change == "away from its pod":  # the fallback left on a port that is not toward pod 1
        fault["trace"] = [[t, 2 if p == 3 else p] for t, p in fault["trace"]]
    else:                               # the fallback port carried nothing
        fault["ports"]["3"]["during"] = 0.01
    assert not judge_fault(fault)[0]
    assert judged(f).verdict == NOT_REPRODUCED


def test_a_busy_cpu_during_a_judged_step_or_the_fault_makes_it_invalid():
    f = recorded()
    f["oversubscribed"]["pp-across"]["best_cpu_busy"] = 0.95
    assert judged(f).verdict == INVALID
    g = recorded()
    g["fault_cpu_busy"] = 0.93
    assert judged(g).verdict == INVALID
    h = recorded()          # a busy round that is not the best one does not count
    h["non-blocking"]["pp-across"]["cpu_busy"][1] = 0.97
    assert judged(h).verdict == REPRODUCED


def test_what_the_cpu_check_reads_is_what_the_verdict_compares():
    f = recorded()          # DP across the non-blocking core is reported, not judged
    f["non-blocking"]["dp-across"]["best_cpu_busy"] = 0.97
    j = judged(f)
    assert j.verdict == REPRODUCED
    assert j.cpu_busy == 0.725      # non-blocking PP across's best step, the busiest judged
    f["non-blocking"]["pp-across"]["best_cpu_busy"] = 0.95
    assert judged(f).verdict == INVALID and judged(f).cpu_busy == 0.95


# ---- the job and the fluid model ----

def fabric(**kw):
    return make_fabric("hpn", {**CorePipeline.base, **kw})


def test_sizes_keep_table_3s_ratios():
    s = job.Sizes.scaled(560, 6, 5500, 16000)
    assert (s.tp, s.pp, s.dp) == (35000, 375, 343750)
    assert s.dp / s.pp == pytest.approx(5500 / 6, rel=1e-3)


def test_placements_put_dp_inside_or_across_the_pods():
    fab = fabric()
    pod = {h: fab.hosts[h].pod for h in fab.hosts}
    for name, crosses in (("pp-across", "PP"), ("dp-across", "DP")):
        phases = dict(zip(job.PHASES, job.step(fab, name, job.Sizes(100, 10, 1000))))
        assert all(t.relay for t in phases["TP"])
        for phase in ("PP", "DP"):
            across = {pod[t.src.host] != pod[t.dst.host] for t in phases[phase]}
            assert across == {phase == crosses}, (name, phase)


def test_only_the_phases_between_pods_cross_the_core():
    sizes = job.Sizes(100, 10, 1000)
    assert job.core_phases(fabric(), "pp-across", sizes) == ["PP"]
    assert job.core_phases(fabric(), "dp-across", sizes) == ["DP"]


def test_the_fluid_model_predicts_the_claim_at_15_to_1():
    sizes = job.Sizes.scaled(560, 6, 5500, 16000)
    over, flat = fabric(), fabric(core_oversubscription=1)
    a15, a1 = (job.predicted_step(f, "pp-across", sizes)["step_s"] for f in (over, flat))
    b15 = job.predicted_step(over, "dp-across", sizes)
    assert a15 / a1 - 1 < 0.02                      # PP across: the core costs ~1%
    assert b15["phases"]["DP"]["bottleneck"] == "core up pod 0"
    assert b15["step_s"] / a15 == pytest.approx(13.3, abs=0.1)   # 15:1 at the NICs' 90% pace


def test_pick_spreads_connections_over_the_nic_ports():
    ports = ("h-n0p0", "h-n0p1")
    devs = ["h-n0p0", "h-n0p0", "h-n0p0", "h-n0p1", "h-n0p1"]
    assert in_turns([1, 2, 3, 4, 5], devs, ports, 2) == (1, 4)
    assert in_turns([1, 2, 3], [None, None, None], ports, 2) == (1, 2)      # a bond hides its choice


@pytest.mark.parametrize("settings", [{"pods": 1}, {"hosts": 3}, {"core_oversubscription": 1},
                                      {"single_tor": "true"}, {"pp_mb": 200000, "dp_mb": 10}])
def test_meaningless_parameters_are_refused(settings):
    with pytest.raises(ParamError):
        CorePipeline().configure(settings, quick=True)


def test_the_expectation_follows_the_oversubscription():
    s = CorePipeline().configure({"core_oversubscription": 4}, quick=True)
    sizes = s.knobs.sizes()
    ratio = s.predicted(s.fabric(), sizes, "dp-across") / s.predicted(s.fabric(), sizes, "pp-across")
    # at 4:1 a pod's core carries 10 Mbit/s for four NICs, against 9 Mbit/s per NIC inside the pod
    assert ratio == pytest.approx(4 * 9 / 10, rel=0.05)


def test_figures_are_not_changed_by_judging():
    f = recorded()
    before = copy.deepcopy(f)
    judged(f)
    assert f == before


def test_a_trace_started_just_before_the_repair_does_not_count_as_during_the_fault():
    # CI: a trace stamped 0.01 s before the repair read the switches after it (port j again)
    from scenarios.claims.core_pipeline import judge_fault
    ports = {"3": {"before": 0.0, "during": 0.52, "after": 0.0},
             "4": {"before": 0.61, "during": 0.0, "after": 0.56}}
    trace = [[t / 4, 4] for t in range(10)] + [[2.85, 3], [3.6, 3], [4.34, 3], [4.59, 4], [5.9, 4], [6.9, 4]]
    fault = {"core": "c0", "in_port": 2, "port_j": 4, "paired_port": 4, "ports": ports, "stream_mbps": 0.533,
             "t_fault": 2.6, "t_repair": 4.6, "t_end": 7.1, "trace": trace}
    assert judge_fault(fault)[0]
