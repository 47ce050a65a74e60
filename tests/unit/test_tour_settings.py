"""The tour's `--set KEY=V` (issue 40): it reaches the scenarios that take KEY and leaves the
others as they are; only a key that no scenario of the tour takes is refused, in one line (exit 2).
A scenario named on the command line still refuses a key it does not take."""
from types import SimpleNamespace

import pytest

from testbed.cli import main, runs
from testbed.core.errors import ParamError
from testbed.scenario import catalog, knobs


def args(names=(), *settings):
    return SimpleNamespace(set=list(settings), repeat=1, retries=0, names=list(names), quick=False,
                           preset=None, servers=None)


def test_spread_gives_each_scenario_the_keys_it_takes():
    takes = {"a": {"flaps", "nics"}, "b": {"nics"}, "c": set()}
    assert knobs.spread({"flaps": 3}, takes) == {"a": {"flaps": 3}, "b": {}, "c": {}}
    assert knobs.spread({}, takes) == {"a": {}, "b": {}, "c": {}}
    message = "--set nosuch: no scenario of the tour takes it; they take: flaps, nics$"
    with pytest.raises(ParamError, match=message):
        knobs.spread({"flaps": 3, "nosuch": 1}, takes)


def test_the_tour_applies_a_knob_to_the_scenarios_that_have_it():
    tour = catalog.tour()
    having = [n for n in tour if "flaps" in catalog.get(n).parameters()]
    assert having and len(having) < len(tour)        # some scenarios flap, most do not
    chosen = runs.chosen_runs(args((), "flaps=4"))
    assert [r.name for r in chosen] == tour
    for run in chosen:
        assert (getattr(run.knobs, "flaps", None) == 4) == (run.name in having), run.name


def test_a_key_no_tour_scenario_takes_is_one_line_and_exit_2(capsys, tmp_path):
    assert main(["run", "--set", "nosuch=3", "--out", str(tmp_path / "out")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [err.strip()] and "--set nosuch: no scenario of the tour" in err
    assert not (tmp_path / "out").exists()


def test_a_named_scenario_still_refuses_a_key_it_lacks():
    lacking = next(n for n in catalog.tour() if "flaps" not in catalog.get(n).parameters())
    with pytest.raises(ParamError, match=f"{lacking}: unknown parameter 'flaps'"):
        runs.chosen_runs(args([lacking], "flaps=4"))
