"""The benches' own logic, without a fabric: framecost's settings and summary, headroom's reading
of results and its background load (a child process ended by its PID). No root."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import framecost  # noqa: E402
import headroom  # noqa: E402


def test_a_setting_names_only_what_differs_from_today_and_unknown_keys_are_refused():
    assert framecost.label(framecost.parse_setting("mtu=1500")) == "today"
    s = framecost.parse_setting("mtu=9000,shape=none")
    assert (s["mtu"], s["shape"], framecost.label(s)) == (9000, "none", "mtu=9000,shape=none")
    with pytest.raises(ValueError, match="keys are"):
        framecost.parse_setting("jumbo=1")


def test_the_ceiling_is_the_busiest_valid_run_and_an_invalid_one_does_not_count():
    runs = [{"s_per_mfh": 40.0, "ms_per_mbit_hop": 3.0, "frame_hops_s": 5000.0, "mbit": 20.0,
             "hops": 3, "valid": True},
            {"s_per_mfh": 50.0, "ms_per_mbit_hop": 4.0, "frame_hops_s": 9e4, "mbit": 400.0,
             "hops": 3, "valid": False}]
    s = framecost.summary(runs)
    assert (s["max_fh_s"], s["max_mbit_hops"], s["s_per_mfh"]) == (5000.0, 60.0, 40.0)


def test_headroom_reads_each_scenarios_verdict_and_busiest_cpu_figure():
    results = [{"scenario": "a", "verdict": "reproduced",
                "figures": {"runs": [{"cpu_busy": 0.4}, {"cpu_busy": 0.9}], "cpu_busy_judged": 0.7}},
               {"scenario": "b", "verdict": "invalid", "figures": {"cpu_busy": 0.95}}]
    assert headroom.rows(results) == {"a": ("reproduced", 0.7, True), "b": ("invalid", None, False)}


def test_headroom_counts_a_repeated_scenario_reproduced_only_when_every_run_was():
    run = lambda verdict, busy: {"scenario": "a", "verdict": verdict,   # noqa: E731
                                 "figures": {"cpu_busy": [busy], "cpu_busy_judged": busy}}
    summaries = [{"scenario": "a", "results": [run("reproduced", 0.5), run("reproduced", 0.6)]},
                 {"scenario": "b", "results": [run("reproduced", 0.5), run("invalid", 0.95)]}]
    assert headroom.rows(summaries) == {"a": ("2 of 2 reproduced", 0.6, True),
                                        "b": ("1 of 2 reproduced", 0.95, False)}


def test_the_background_load_is_a_child_that_is_gone_when_the_block_ends():
    with headroom.BusyLoop(0.2) as load:
        assert load.proc.poll() is None
    assert load.proc.returncode is not None


def test_a_pass_reads_the_results_out_of_run_json_envelope(monkeypatch, tmp_path):
    # what `hpn-testbed run --json` prints: an envelope whose "result" is the list of results
    envelope = ('{"hpn_testbed": 1, "command": "run", "ok": true, '
                '"result": [{"scenario": "a", "verdict": "reproduced"}]}')
    monkeypatch.setattr(headroom.subprocess, "run",
                        lambda *a, **k: headroom.subprocess.CompletedProcess(a, 0, envelope, ""))
    results, _ = headroom.run_pass(["a"], tmp_path, full=False)
    assert headroom.rows(results) == {"a": ("reproduced", None, True)}


def test_issue_27s_figure_is_each_mtus_cost_per_mbit_against_1500_in_the_same_run():
    texts = ("mtu=1500", "mtu=4096", "mtu=9000", "mtu=9000,shape=none")
    settings = [framecost.parse_setting(s) for s in texts]
    names = [framecost.label(s) for s in settings]
    cost = dict(zip(names, (3.0, 2.1, 1.2, 0.1)))
    line = framecost.goal_line(names, settings, {n: {"ms_per_mbit_hop": c} for n, c in cost.items()})
    assert "mtu=4096 0.70x (not met)" in line and "mtu=9000" in line and "0.40x (met)" in line
    assert "0.03x" not in line           # another shaping is not the fabric's: left out
    alone = framecost.goal_line(names[1:2], settings[1:2], {names[1]: {"ms_per_mbit_hop": 2.1}})
    assert "needs mtu=1500" in alone


def test_headroom_refuses_an_mtu_out_of_range_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["headroom.py", "--mtu", "1500", "9001"])
    with pytest.raises(SystemExit) as exit_:
        headroom.main()
    assert exit_.value.code == 2 and capsys.readouterr().err.count("\n") == 1


def test_a_pass_at_an_mtu_runs_with_hpn_mtu_set(monkeypatch, tmp_path):
    seen = {}

    def fake_run(argv, **kw):
        seen.update(kw["env"])
        return headroom.subprocess.CompletedProcess(argv, 0, '{"result": []}', "")
    monkeypatch.setattr(headroom.subprocess, "run", fake_run)
    headroom.run_pass(["a"], tmp_path, full=False, mtu=9000)
    assert seen["HPN_MTU"] == "9000" and headroom.pass_name("loaded", 9000) == "loaded@9000"
