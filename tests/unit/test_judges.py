"""Every scenario's judge, fed recorded figures: no fabric, no root (those with a file of their
own, test_judge_*.py, are judged there).

The "reproduced" figures of each scenario are numbers its quick run measured here (trimmed to
what the judge reads); the other cases change the few numbers a real failure changes: the effect
missing ("not reproduced"), or the CPU, not the fabric, the bottleneck ("invalid").
"""
import copy
import re
from pathlib import Path

import pytest

import scenarios
from testbed.measure.validity import JUDGED_BUSY, busiest
from testbed.scenario import fault_harness as harness
from testbed.scenario.base import INVALID, NOT_REPRODUCED, REPRODUCED, Judgement
from testbed.scenario.timeline import Timeline

from .conftest import put

# ---- recorded figures, one function per scenario ----

def dual_plane_balance():
    def variant(rounds):
        rows = [{"flows_per_port": f, "max_over_min": r, "mean_queue_kb": q, "cpu_busy": 0.75}
                for f, r, q in rounds]
        return {"rounds": rows,
                "mean_max_over_min": round(sum(x["max_over_min"] for x in rows) / len(rows), 2),
                "mean_queue_kb": round(sum(sum(x["mean_queue_kb"]) / 2 for x in rows) / len(rows), 2),
                "busy_port_queue_kb": round(sum(max(x["mean_queue_kb"]) for x in rows) / len(rows), 2)}
    return {"ecmp": variant([([3, 3], 1.0, [4.2, 3.5]), ([2, 4], 2.0, [1.0, 38.0]),
                             ([1, 5], 4.99, [0.3, 28.1])]),
            "dual-plane": variant([([3, 3], 1.0, [3.9, 3.6]), ([3, 3], 1.0, [3.7, 3.3]),
                                   ([3, 3], 1.01, [3.6, 3.6])]),
            "setup": {}, "series": {}}


def disjoint_paths():
    def row(hashing, selected, spines):
        return {"hashing": {"completion_s": hashing, "connections_per_spine": spines, "cpu_busy": 0.4},
                "path-selection": {"completion_s": selected, "cpu_busy": 0.48,
                                   "connections_per_spine": {"pl0s0": 2, "pl0s1": 2}}}
    stacked = {"pl0s0": 3, "pl0s1": 1}
    return {"rounds": [row(2.34, 1.707, stacked), row(2.376, 1.695, stacked), row(2.337, 1.719, stacked)],
            "setup": {"rounds": 3}, "series": {}}


def mpft_vs_mrft():
    def family(times):
        return {"completion_s": times, "median_s": sorted(times)[1], "best_s": min(times),
                "busbw_mbit": [3.5, 3.4, 3.5], "ranks": 8}
    return {"mpft": family([1.175, 1.225, 1.202]), "mrft": family([1.223, 1.185, 1.214]),
            "cpu_busy": [0.625, 0.689, 0.71, 0.68, 0.733, 0.578],
            "setup": {"size": 600_000, "repetitions": 3}, "series": {}}


def node_limited_moe():
    def row(m, measured, busy):
        formula = m * 7000 * 3
        return {"M": m, "formula_bytes": formula, "measured_bytes": measured,
                "error": round(measured / formula - 1, 4), "completion_s": 0.7 * m, "cpu_busy": busy}
    return {"rows": [row(1, 21015, 0.62), row(4, 84825, 0.459), row(8, 169950, 0.319)],
            "setup": {"tokens_per_gpu": 4}, "series": {}}


def routing_policies():
    return {"ecmp": {"busbw_mbit": [3.615, 4.019], "mean_busbw_mbit": 3.817},
            "static": {"busbw_mbit": [7.193, 5.878], "mean_busbw_mbit": 6.536},
            "adaptive": {"busbw_mbit": [5.539, 5.165], "mean_busbw_mbit": 5.352},
            "cpu_busy": [0.416, 0.405, 0.571, 0.53, 0.49, 0.417],
            "setup": {"rounds": 2}, "series": {}}


def dual_tor_link_failure():
    return {"dual_tor": {"ports": 4, "nics": 2, "line_mbps": 40.0, "baseline_mbps": 40.02,
                         "during_mbps": 29.97, "repaired_mbps": 38.01, "loss": 0.251,
                         "failed_nic_kept": 0.5, "recovered_s_after_repair": 0.26, "fault_s": 2.5},
            "single_tor": {"ports": 2, "nics": 2, "line_mbps": 20.0, "baseline_mbps": 20.02,
                           "during_mbps": 9.99, "repaired_mbps": 18.68, "loss": 0.501,
                           "failed_nic_kept": 0.0, "recovered_s_after_repair": 1.45, "fault_s": 2.5},
            "setup": {"warm_base_fault_after_s": [1.5, 2.0, 2.5, 2.5]}, "series": {}}


def link_flap():
    return {"dual_tor": {"line_mbps": 40.0, "baseline_mbps": 39.97, "during_train_mbps": 30.33,
                         "after_train_mbps": 38.79, "flapping_nic_kept_during_train": 0.538,
                         "flapping_nic_kept_after_train": 0.97, "longest_stall_s": 0.1, "train_s": 2.81},
            "single_tor": {"line_mbps": 20.0, "baseline_mbps": 20.02, "during_train_mbps": 10.03,
                           "after_train_mbps": 17.39, "flapping_nic_kept_during_train": 0.0,
                           "flapping_nic_kept_after_train": 0.744, "longest_stall_s": 3.62, "train_s": 2.8},
            "setup": {"flaps": 3, "period_s": 1.0, "down_s": 0.8,
                      "warm_base_fault_after_s": [1.5, 1.5, 3.0, 3.0]}, "series": {}}


def one_way_fault():
    def phase(stuck, stall, detected, during):
        return {"carrier_up": True, "streams": 4, "streams_on_faulty_port": 2, "stuck_streams": stuck,
                "longest_stream_stall_s": stall, "fault_s": 4.0, "detected_ms": detected,
                "nic_baseline_mbps": 9.4, "nic_during_mbps": during}
    return {"carrier_only": phase(2, 3.8, None, 4.79), "with_detector": phase(0, 0.4, 97, 9.34),
            "setup": {"warm_base_fault_after_s": [1.5, 1.5, 4.0, 1.0]}, "series": {}}


def tor_failure(single=False):
    def host(base, during, repaired, nic0_kept, line=40.0):
        return {"line_mbps": line, "baseline_mbps": base, "during_mbps": during, "repaired_mbps": repaired,
                "kept": round(during / base, 3), "nic0_kept": nic0_kept}
    single_tor = {"p0s0h0": host(20.0, 10.0, 19.0, 0.0, 20.0), "p0s0h1": host(20.0, 10.0, 19.2, 0.0, 20.0)}
    return {"dual_tor": {"p0s0h0": host(39.88, 30.0, 38.52, 0.502), "p0s0h1": host(40.01, 30.01, 39.24, 0.5)},
            "single_tor": single_tor if single else None,     # quick mode runs dual-ToR only
            "setup": {"warm_base_fault_after_s": [1.5, 2.0, 2.5, 3.5]}, "series": {}}


RECORDED = {"dual-plane-balance": dual_plane_balance,
            "disjoint-paths": disjoint_paths, "mpft-vs-mrft": mpft_vs_mrft,
            "node-limited-moe": node_limited_moe, "routing-policies": routing_policies,
            "dual-tor-link-failure": dual_tor_link_failure, "link-flap": link_flap,
            "one-way-fault": one_way_fault, "tor-failure": tor_failure}


# ---- what a failed or invalid run changes ----

YES, NO = REPRODUCED, NOT_REPRODUCED

def busy(value):
    """Set every CPU busy fraction the figures hold."""
    def change(node):
        for key, v in (node.items() if isinstance(node, dict) else enumerate(node)):
            if key == "cpu_busy":
                node[key] = [value] * len(v) if isinstance(v, list) else value
            elif isinstance(v, (dict, list)):
                change(v)
    return change


def hashing_spread_like_selection(figures):
    for row in figures["rounds"]:
        row["hashing"]["completion_s"] = round(row["path-selection"]["completion_s"] * 1.02, 3)


def ecmp_happened_to_balance(figures):
    figures["ecmp"] = copy.deepcopy(figures["dual-plane"])


CASES = [
    # (scenario, case, changes, verdict)
    ("dual-plane-balance", "recorded", [], YES),
    ("dual-plane-balance", "ECMP hashed evenly every round", [ecmp_happened_to_balance], NO),
    ("dual-plane-balance", "a round's CPU saturated", [put("dual-plane.rounds.2.cpu_busy", 0.965)], INVALID),
    ("disjoint-paths", "recorded", [], YES),
    ("disjoint-paths", "hashing spread the connections", [hashing_spread_like_selection], NO),
    ("disjoint-paths", "path selection slower in a round", [put("rounds.1.path-selection.completion_s", 2.7)],
     NO),
    ("disjoint-paths", "CPU saturated", [busy(0.95)], INVALID),
    ("mpft-vs-mrft", "recorded", [], YES),
    ("mpft-vs-mrft", "9.6% apart is still equal", [put("mrft.best_s", 1.3)], YES),
    ("mpft-vs-mrft", "MRFT 20% slower", [put("mrft.best_s", 1.47)], NO),
    ("mpft-vs-mrft", "CPU saturated in a run that was not its fabric's best",
     [put("cpu_busy", [0.625, 0.931, 0.71, 0.99, 0.7, 0.5])], YES),
    ("mpft-vs-mrft", "CPU saturated in the best runs",
     [put("cpu_busy", [0.925, 0.689, 0.71, 0.68, 0.95, 0.5])],
     INVALID),
    ("node-limited-moe", "recorded", [], YES),
    ("node-limited-moe", "M=4 moves 8% too many bytes", [put("rows.1.error", 0.08)], NO),
    ("node-limited-moe", "CPU saturated at M=4", [put("rows.1.cpu_busy", 0.907)], INVALID),
    # M=1's 0.5 s layer is mostly its agents starting: a busy CPU there counts only if its bytes are off
    ("node-limited-moe", "CPU saturated in a short layer, bytes right", [put("rows.0.cpu_busy", 0.93)], YES),
    ("node-limited-moe", "CPU saturated in a short layer, bytes off",
     [put("rows.0.cpu_busy", 0.93), put("rows.0.error", 0.08)], INVALID),
    ("routing-policies", "recorded", [], YES),
    ("routing-policies", "ECMP hashed the flows apart", [put("ecmp.mean_busbw_mbit", 6.2)], NO),
    ("routing-policies", "adaptive never moved a flow", [put("adaptive.mean_busbw_mbit", 3.9)], NO),
    ("routing-policies", "CPU saturated", [busy(0.97)], INVALID),
    ("dual-tor-link-failure", "recorded", [], YES),
    ("dual-tor-link-failure", "dual-ToR NIC did not fail over",
     [put("dual_tor.loss", 0.5), put("dual_tor.failed_nic_kept", 0.0)], NO),
    ("dual-tor-link-failure", "dual-ToR not back after repair", [put("dual_tor.repaired_mbps", 30.1)],
     NO),
    ("dual-tor-link-failure", "single-ToR NIC kept sending", [put("single_tor.failed_nic_kept", 0.5)],
     NO),
    ("dual-tor-link-failure", "baseline under 70% of the line", [put("single_tor.baseline_mbps", 12.0)],
     INVALID),
    ("link-flap", "recorded", [], YES),
    ("link-flap", "dual-ToR stalled too", [put("dual_tor.longest_stall_s", 1.2)], NO),
    ("link-flap", "single-ToR never stalled past a flap", [put("single_tor.longest_stall_s", 0.9)],
     NO),
    ("link-flap", "baseline below 70% of the line", [put("dual_tor.baseline_mbps", 26.0)], INVALID),
    ("one-way-fault", "recorded", [], YES),
    ("one-way-fault", "the detector missed the fault",
     [put("with_detector.detected_ms", None), put("with_detector.stuck_streams", 2)], NO),
    ("one-way-fault", "a stream stuck despite the detector", [put("with_detector.stuck_streams", 1)],
     NO),
    ("one-way-fault", "carrier went down", [put("carrier_only.carrier_up", False)], NO),
    ("one-way-fault", "no stream hashed onto the faulty port",
     [put("carrier_only.streams_on_faulty_port", 0), put("carrier_only.stuck_streams", 0)], INVALID),
    ("tor-failure", "recorded (quick: dual-ToR only)", [], YES),
    ("tor-failure", "a host lost half", [put("dual_tor.p0s0h1.kept", 0.5)], NO),
    ("tor-failure", "a host's NIC 0 did not fail over", [put("dual_tor.p0s0h0.nic0_kept", 0.0)], NO),
    ("tor-failure", "back at 82% after repair (a slow run)", [put("dual_tor.p0s0h0.repaired_mbps", 32.7)],
     YES),
    ("tor-failure", "still at 76% after repair", [put("dual_tor.p0s0h0.repaired_mbps", 30.3)], NO),
    ("tor-failure", "baseline below 70% of the line", [put("dual_tor.p0s0h0.baseline_mbps", 25.0)], INVALID),
]


def judged(name: str, changes, figures=None) -> Judgement:
    figures = figures or RECORDED[name]()
    for change in changes:
        change(figures)
    before = copy.deepcopy(figures)
    judgement = scenarios.get(name).judge(figures)
    assert figures == before, "a judge must not change the figures it is given"
    return judgement


@pytest.mark.parametrize("name,case,changes,expected", CASES, ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_judge(name, case, changes, expected):
    judgement = judged(name, changes)
    assert judgement.verdict == expected, judgement.measured
    assert judgement.expectation and judgement.measured


def test_every_scenario_has_each_verdict():
    """Every scenario's judge is tested with each verdict: here, or in its own file
    tests/unit/test_judge_MODULE.py (which must then name all three)."""
    seen = {(name, verdict) for name, _, _, verdict in CASES}
    for name, cls in scenarios.all_scenarios().items():
        if name not in RECORDED:
            own = Path(__file__).with_name(f"test_judge_{cls.__module__.split('.')[-1]}.py")
            assert own.is_file(), f"{name}: no judge cases here nor in {own.name}"
            # each verdict used outside the import lines (the import alone names all three)
            body = "\n".join(l for l in own.read_text().splitlines() if "import" not in l)
            assert all(re.search(rf"\b{v}\b", body) for v in ("REPRODUCED", "NOT_REPRODUCED", "INVALID")), \
                own.name
            continue
        for verdict in (REPRODUCED, NOT_REPRODUCED, INVALID):
            assert (name, verdict) in seen, f"{name} has no {verdict!r} case"


# ---- tor-failure's full run adds single-ToR ----

def test_tor_failure_full_run_judges_single_tor_too():
    judgement = judged("tor-failure", [], tor_failure(single=True))
    assert judgement.verdict == REPRODUCED and "single-ToR: p0s0h0 kept 50%" in judgement.measured
    assert "not run in quick mode" not in judgement.expectation
    assert judged("tor-failure", [put("single_tor.p0s0h1.nic0_kept", 0.4)],
                  tor_failure(single=True)).verdict == NOT_REPRODUCED
    assert judged("tor-failure", [put("single_tor.p0s0h1.baseline_mbps", 9.0)],
                  tor_failure(single=True)).verdict == INVALID


# ---- the prose quotes the figures ----

def test_prose_quotes_the_figures():
    assert "loss 25.1% (expected 25.0%)" in judged("dual-tor-link-failure", []).measured
    assert "ECMP/static 0.58" in judged("routing-policies", []).measured
    assert "M=4 gives 84.8 KB" in judged("node-limited-moe", []).measured
    assert "port out 97 ms after the fault" in judged("one-way-fault", []).measured
    assert "+37.7% collective throughput" in judged("disjoint-paths", []).measured


# ---- the report head, from the scenario's own attributes ----

def test_report_fills_the_head_and_merges_derived_figures():
    scenario = scenarios.get("dual-tor-link-failure")
    figures = dual_tor_link_failure()
    result = scenario.report(figures)
    assert (result.scenario, result.claim, result.paper) == (scenario.name, "C2", scenario.paper)
    assert result.verdict == REPRODUCED
    assert result.figures["expected_loss_dual"] == 0.25 and result.figures["dual_tor"]["loss"] == 0.251
    assert "setup" not in result.figures and "series" not in result.figures
    assert result.setup == figures["setup"] and result.series == figures["series"]


# ---- registration ----

def test_tour_is_derived_from_the_classes_in_module_order():
    assert scenarios.TOUR == ["hash-polarization", "dual-plane-balance", "mpft-vs-mrft", "node-limited-moe",
                              "disjoint-paths", "dual-tor-link-failure", "link-flap", "one-way-fault",
                              "miswiring", "segment-placement", "core-pipeline", "rail-only",
                              "skeleton-probing"]
    assert list(scenarios.all_scenarios()) == [
        "hash-polarization", "dual-plane-balance", "mpft-vs-mrft", "node-limited-moe", "disjoint-paths",
        "routing-policies", "dual-tor-link-failure", "link-flap", "one-way-fault", "tor-failure",
        "segment-tor-failure", "miswiring", "segment-placement", "core-pipeline", "rail-only", "roce-entropy",
        "fast-uplinks",
        "skeleton-probing", "training-fault"]
    for name, cls in scenarios.all_scenarios().items():
        assert cls.name == name and cls.claim and cls.title and cls.paper


def test_unknown_scenario_is_a_parameter_error():
    from testbed.core.errors import ParamError
    with pytest.raises(ParamError, match="no scenario 'nope'"):
        scenarios.get("nope")


# ---- the fault harness, without a fabric ----

def test_timeline_is_stated_once():
    quick = Timeline.choose(True, (1.5, 2.0, 2.5, 2.5), (2.0, 4.0, 6.0, 5.0))
    assert quick.steps() == [1.5, 2.0, 2.5, 2.5] and quick.seconds == 8.5
    assert Timeline.choose(False, (1.5, 2.0, 2.5, 2.5), (2.0, 4.0, 6.0, 5.0)).fault == 6.0


def test_the_fault_workload_measures_only_while_every_client_runs():
    # clients started 0.4 s apart (a slow CPU): the first ends 0.4 s before the last, and its
    # NIC's rate falling to 0 then is no stall of the fabric
    w = harness.Workload(emu=None)
    w.seconds, w.clients = 8.5, [("client n0", 1.2), ("client n1", 1.6)]
    assert w.all_running_until() == pytest.approx(9.7)


def test_dual_and_single_keys_each_variant():
    def variant(single_tor):
        return {"rate": 20 if single_tor else 40, "setup": {"single": single_tor}, "series": [[0, 1]]}
    both = harness.dual_and_single(variant, {"x_label": "t"})
    assert both["dual_tor"] == {"rate": 40} and both["single_tor"] == {"rate": 20}
    assert both["setup"] == {"x_label": "t", "dual": {"single": False}, "single": {"single": True}}
    assert set(both["series"]) == {"dual-ToR", "single-ToR"}
    assert harness.dual_and_single(variant, {}, single=False)["single_tor"] is None


def test_saturated_means_the_baseline_filled_the_links():
    assert harness.saturated({"baseline_mbps": 28.0, "line_mbps": 40.0})
    assert not harness.saturated({"baseline_mbps": 40.0, "line_mbps": 40.0},
                                 {"baseline_mbps": 13.9, "line_mbps": 20.0})


def test_a_run_that_lost_a_part_is_invalid_whatever_it_measured(tmp_path):
    from testbed.core.errors import PartLost
    scenario = scenarios.get("link-flap")

    def run(quick):
        raise PartLost("the controller exited (status -9)")
    scenario.run = run
    result = scenario.execute(tmp_path, quick=True)
    assert result.verdict == "invalid" and "controller exited" in result.measured
    assert (tmp_path / "link-flap.json").exists()


# ---- the CPU figure a verdict's validity read ----

@pytest.mark.parametrize("name", sorted(RECORDED))
def test_a_report_records_the_cpu_figure_its_validity_read(name):
    """Where a judge reads the CPU it says what it read (Judgement.cpu_busy): the busiest of the
    runs its verdict rests on, never above the busiest figure recorded; the report writes it as
    JUDGED_BUSY, which is what `busiest` (the invalid cause, bench/headroom.py) then reads."""
    figures = RECORDED[name]()
    recorded_max = highest_cpu(figures)
    result = scenarios.get(name).report(copy.deepcopy(figures))
    judged_busy = result.figures.get(JUDGED_BUSY)
    if recorded_max is None:            # the fault scenarios read no CPU figure
        assert judged_busy is None
        return
    assert judged_busy is not None and judged_busy <= recorded_max
    assert busiest(result.figures) == judged_busy


def highest_cpu(value, key: str = "") -> float | None:
    """The highest figure named cpu_busy anywhere in a run's figures (what a judge may read)."""
    if isinstance(value, dict):
        found = [highest_cpu(v, str(k)) for k, v in value.items()]
    elif isinstance(value, (list, tuple)):
        found = [highest_cpu(v, key) for v in value]
    else:
        return float(value) if "cpu_busy" in key and isinstance(value, (int, float)) else None
    return max((f for f in found if f is not None), default=None)


def test_busiest_is_the_judged_figure_only():
    """What a result's validity read is the figure its judge stated (JUDGED_BUSY), never a guess
    from whatever figures are named cpu_busy."""
    figures = {"a": {"cpu_busy": [0.5, 0.97]}, "b": {"best_cpu_busy": 0.6}}
    assert busiest(figures) is None
    assert busiest({**figures, JUDGED_BUSY: 0.6}) == 0.6
