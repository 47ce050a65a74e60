"""Scenario parameters without a fabric: knobs typed and ranged, fabric parameters by their `topo
show` names, keys a scenario sets itself refused, claims that would lose their meaning refused,
and judges whose expectation follows the parameters; repeat statistics."""
import dataclasses

import pytest

import scenarios
from testbed.core.errors import ParamError
from testbed.scenario import knobs, repeat
from testbed.scenario.base import REPRODUCED, Result


def configured(name, quick=False, **settings):
    return scenarios.get(name).configure({k: str(v) for k, v in settings.items()}, quick)


@pytest.mark.parametrize("name", list(scenarios.all_scenarios()))
def test_every_scenario_configures_at_its_defaults_and_describes_its_knobs(name):
    for quick in (False, True):
        s = configured(name, quick)
        assert dataclasses.asdict(s.knobs) is not None and s.settings == {}
    for k in scenarios.get(name).Knobs.describe():
        assert k["help"] and k["type"], k


def test_quick_and_full_defaults_are_the_tours_and_the_full_runs():
    tl = configured("dual-tor-link-failure", quick=True).knobs.timeline()
    assert tl.steps() == [1.5, 2.0, 2.5, 2.5]
    assert configured("dual-tor-link-failure").knobs.timeline().steps() == [2.0, 4.0, 6.0, 5.0]
    assert configured("node-limited-moe", quick=True).knobs.m == (1, 4, 8)
    assert configured("node-limited-moe", quick=True).knobs.tokens == 8
    assert configured("one-way-fault", quick=True).knobs.timeline().steps() == [1.5, 1.5, 4.0, 1.0]


def test_settings_split_into_knobs_and_fabric_parameters():
    s = configured("dual-tor-link-failure", quick=True, nics=3, streams=6, fault=3.5)
    assert s.settings == {"nics": "3"} and s.knobs.streams == 6 and s.knobs.fault == 3.5
    assert s.fabric().params.nics == 3 and s.fabric(single_tor=True).params.single_tor
    assert configured("node-limited-moe", m="2,3").knobs.m == (2, 3)


def test_a_scenario_base_is_under_the_users_settings():
    s = configured("dual-plane-balance", hosts=5, senders=4)
    assert s.fabric().params.hosts == 5 and s.fabric().params.pods == 1
    assert configured("mpft-vs-mrft", nics=3).fabric("mrft").params.rails == 3
    assert configured("mpft-vs-mrft", nics=3).fabric("mpft").params.planes == 3


@pytest.mark.parametrize("name,settings,match", [
    ("dual-tor-link-failure", {"nosuch": 1}, "unknown parameter 'nosuch'"),
    ("dual-tor-link-failure", {"streams": "many"}, "streams='many': expected int"),
    ("dual-tor-link-failure", {"streams": 0}, "streams=0: must be between 1 and 32"),
    ("dual-tor-link-failure", {"fault": "inf"}, "must be a finite number"),
    ("dual-tor-link-failure", {"hosts": 0}, "hosts=0"),                    # the model's own check
    ("node-limited-moe", {"m": ""}, "expected a comma-separated list"),
])
def test_bad_keys_and_values_are_one_line_parameter_errors(name, settings, match):
    with pytest.raises(ParamError, match=match) as e:
        configured(name, **settings)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("name,settings,match", [
    ("dual-tor-link-failure", {"single_tor": "true"}, "runs dual-ToR and single-ToR HPN itself"),
    ("dual-tor-link-failure", {"hosts": 1}, "needs hosts >= 2"),
    ("link-flap", {"down": 1.0, "period": 1.0}, "must be shorter than period"),
    ("one-way-fault", {"load": 0.8}, "one port cannot carry"),
    ("one-way-fault", {"streams": 1}, "needs 2 or more streams"),
    ("dual-plane-balance", {"dual_plane": "false"}, "with and without dual-plane itself"),
    ("dual-plane-balance", {"senders": 4}, "needs hosts >= senders \\+ 1"),
    ("dual-plane-balance", {"nics": 1, "rails": 1}, "rail-1 NIC"),
    ("hash-polarization", {"cores": 3}, "aggs = cores >= 2"),
    ("hash-polarization", {"pods": 1}, "needs pods >= 2"),
    ("node-limited-moe", {"m": "1,9"}, "M <= hosts - 1 = 8"),
    ("mpft-vs-mrft", {"planes": 3}, "set nics=N"),
    ("disjoint-paths", {"spines": 1}, "two spines to choose from"),
    ("routing-policies", {"hosts_per_leaf": 1}, "two jobs"),
])
def test_a_parameter_that_makes_the_claim_meaningless_is_refused(name, settings, match):
    with pytest.raises(ParamError, match=match) as e:
        configured(name, **settings)
    assert str(e.value).startswith(name) and "\n" not in str(e.value)


def test_preset_applies_to_the_scenarios_family_and_set_overrides_it():
    s = scenarios.get("dual-tor-link-failure").configure({"hosts": "12"}, True, "segment")
    assert s.settings["nics"] == 8 and s.settings["hosts"] == "12"
    with pytest.raises(ParamError, match="no preset 'segment' for clos3"):
        scenarios.get("hash-polarization").configure({}, True, "segment")


def test_recorded_knobs_come_back_from_the_setup():
    s = scenarios.get("node-limited-moe")
    assert s.knobs_of({"setup": {"knobs": {"m": [1, 2], "tokens": 3}}}).m == (1, 2)
    assert s.knobs_of({"setup": {}}).tokens == 8      # not recorded: the default


def test_split_names_the_scenario_and_the_known_keys():
    with pytest.raises(ParamError, match="x: unknown parameter 'zz'; known: .*streams"):
        knobs.split({"zz": 1}, scenarios.get("link-flap").Knobs, {"nics"}, {}, "x")
    assert knobs.fabric_keys(("mpft", "mrft")) >= {"leaves", "spines", "scale"}
    assert "planes" not in knobs.fabric_keys(("mpft", "mrft"))


# ---- judges follow the parameters ----

def dual_tor_figures(nics: int, loss: float) -> dict:
    ports = 2 * nics
    def side(single):
        line = 10.0 * nics * (1 if single else 2)
        return {"ports": ports // (2 if single else 1), "nics": nics, "line_mbps": line,
                "baseline_mbps": line, "during_mbps": line * (1 - (1 / nics if single else loss)),
                "repaired_mbps": line, "loss": 1 / nics if single else loss,
                "failed_nic_kept": 0.0 if single else 0.5, "recovered_s_after_repair": 0.3, "fault_s": 2.5}
    return {"dual_tor": side(False), "single_tor": side(True),
            "setup": {"warm_base_fault_after_s": [1.5, 2.0, 2.5, 2.5]}, "series": {}}


def test_dual_tor_expects_one_over_two_nics_from_the_figures():
    judge = scenarios.get("dual-tor-link-failure").judge
    three = judge(dual_tor_figures(3, 0.165))
    assert three.verdict == REPRODUCED and three.derived["expected_loss_dual"] == round(1 / 6, 3)
    assert "1/(2 x 3 NICs) = 16.7%" in three.expectation and "loss 16.5% (exp. 16.7%)" in three.headline
    assert judge(dual_tor_figures(3, 0.25)).verdict != REPRODUCED     # 2 NICs' loss is wrong for 3


def test_tor_failure_expects_the_share_of_ports_left_on_other_tors():
    def host(kept, ports, on_tor):
        return {"line_mbps": 60.0, "baseline_mbps": 60.0, "during_mbps": 60 * kept, "repaired_mbps": 59.0,
                "kept": kept, "nic0_kept": 0.5, "ports": ports, "ports_on_tor": on_tor}
    figures = {"dual_tor": {"p0s0h0": host(0.83, 6, 1), "p0s0h1": host(0.84, 6, 1)}, "single_tor": None,
               "setup": {"warm_base_fault_after_s": [1.5, 2.0, 2.5, 3.5]}, "series": {}}
    judged = scenarios.get("tor-failure").judge(figures)
    assert judged.verdict == REPRODUCED and judged.derived["expected_kept_dual"] == 0.833
    figures["dual_tor"]["p0s0h0"]["kept"] = 0.6
    assert scenarios.get("tor-failure").judge(figures).verdict != REPRODUCED


# ---- repeats ----

def result(verdict, **figures):
    return Result("s", "C0", "paper", "e", "m", verdict, figures=figures)


def test_numbers_flatten_nested_figures_and_skip_lists_and_flags():
    assert repeat.numbers({"a": 1, "b": {"c": 2.5, "d": [1, 2], "e": True, "f": None}, "g": "x"}) == \
        {"a": 1.0, "b.c": 2.5}


def test_spread_is_median_and_range():
    assert repeat.spread([3.0, 1.0, 2.0, 10.0]) == {"median": 2.5, "min": 1.0, "max": 10.0, "spread": 9.0,
                                                    "runs": 4}


def test_summary_counts_reproduced_runs_and_spreads_every_figure():
    s = repeat.summarize([result("reproduced", loss=0.25, x={"y": 1}), result("not reproduced", loss=0.1),
                          result("reproduced", loss=0.2, x={"y": 3})])
    assert s["summary"] == "reproduced in 2 of 3" and s["reproduced"] == 2
    assert s["figures"]["loss"]["median"] == 0.2 and s["figures"]["x.y"]["runs"] == 2
    assert s["verdicts"] == ["reproduced", "not reproduced", "reproduced"]


def test_repeat_runs_fresh_each_time_and_writes_every_run(tmp_path):
    s = scenarios.get("link-flap").configure({}, True)
    calls = []

    def execute(out, quick, stem):
        calls.append(stem)
        return result("reproduced", loss=len(calls))
    s.execute = execute
    summary, results = repeat.repeat(s, 3, tmp_path)
    assert calls == ["link-flap.run1", "link-flap.run2", "link-flap.run3"] and len(results) == 3
    assert summary["figures"]["loss"] == {"median": 2.0, "min": 1.0, "max": 3.0, "spread": 2.0, "runs": 3}
    assert (tmp_path / "link-flap.repeat.json").exists()


# ---- the command line's listings (no root) ----

def test_run_name_help_and_list_params_show_knobs_and_fabric(capsys, monkeypatch):
    import json

    from testbed.cli import main
    from testbed.core import interrupts
    monkeypatch.setattr(interrupts, "install", lambda: None)
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["run", "dual-plane-balance", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--repeat N" in out and "rounds" in out and "hosts=4" in out and "not settable: dual_plane" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert main(["list", "--params", "--json"]) == 0
    listed = {s["name"]: s for s in json.loads(capsys.readouterr().out)["result"]}
    knobs = {k["name"]: k for k in listed["link-flap"]["params"]["knobs"]}
    assert knobs["flaps"]["default"] == 5 and knobs["flaps"]["quick"] == 3
    assert listed["link-flap"]["tour"] is True
    assert listed["mpft-vs-mrft"]["params"]["fabric"]["params"]["scale"] == 0.01


def test_the_tour_summary_fits_80_columns_on_a_pipe():
    import io

    from rich.console import Console

    from testbed.cli.runs import summary_table
    results = [Result(name, cls.claim, "p", "e", "a long measured text; " * 5, "not reproduced",
                      headline="dual-ToR loss 25.1% (exp. 25.0%), single-ToR NIC kept 0%")
               for name, cls in scenarios.all_scenarios().items()]
    out = io.StringIO()
    Console(file=out, width=80).print(summary_table(results))      # what a pipe gets: no colour codes
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80 and "\x1b" not in text
    assert all(name in text for name in scenarios.all_scenarios())
