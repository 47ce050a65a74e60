"""An invalid verdict says why (testbed/measure/validity.py): a recorded figure set with the CPU busy
gives a headline, a measured text and a figure title that name the CPU."""
import scenarios
from testbed.scenario import plots
from testbed.scenario.base import INVALID


def recorded(busy: float) -> dict:
    """disjoint-paths' figures of two rounds, as a run writes them."""
    def mode(seconds):
        return {"completion_s": seconds, "connections_per_spine": {"s0": 2, "s1": 2}, "cpu_busy": busy}
    return {"rounds": [{"hashing": mode(2.0), "path-selection": mode(1.5)} for _ in range(2)],
            "setup": {}}


def test_a_busy_cpu_is_named_in_headline_measured_and_figure():
    scenario = scenarios.get("disjoint-paths")
    scenario.configure({}, True)
    result = scenario.report(recorded(0.95))
    assert result.verdict == INVALID
    cause = "CPU 95% busy: the emulator, not the fabric, set the rate"
    assert result.headline.startswith(cause) and cause in result.measured
    fig, _ = plots.figure(scenario, result)
    assert cause in fig.texts[0].get_text() if fig.texts else cause in fig._suptitle.get_text()


def test_a_valid_result_is_left_alone():
    scenario = scenarios.get("disjoint-paths")
    scenario.configure({}, True)
    result = scenario.report(recorded(0.5))
    assert result.verdict != INVALID and "CPU" not in result.headline


def test_an_invalid_result_without_a_cpu_figure_still_says_why():
    from testbed.measure.validity import GENERIC, explain
    from testbed.scenario.base import Judgement
    judged = explain(Judgement(INVALID, "e", "1 run", headline=""))
    assert judged.headline == GENERIC and GENERIC in judged.measured


def test_the_rule_is_one_function_and_a_judgement_applies_it():
    from testbed.measure.validity import BUSY_LIMIT, cpu
    from testbed.scenario.base import REPRODUCED, Judgement
    assert cpu().valid and cpu().busy is None
    assert cpu(0.5, BUSY_LIMIT).valid and cpu(0.5, BUSY_LIMIT).busy == BUSY_LIMIT
    assert not cpu(0.5, 0.95).valid and "CPU 95% busy" in cpu(0.5, 0.95).why
    judged = Judgement(REPRODUCED, "e", "m", busy=[0.4, 0.95])
    assert judged.verdict == INVALID and judged.cpu_busy == 0.95
    assert Judgement(REPRODUCED, "e", "m", busy=(0.4,)).verdict == REPRODUCED
