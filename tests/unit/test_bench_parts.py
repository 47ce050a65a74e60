"""The benches' own logic, without a fabric: framecost's settings and summary, headroom's reading
of results and its background load (a child process ended by its PID). No root."""
import subprocess
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


def test_headroom_reads_each_scenarios_verdict_busiest_cpu_and_worst_waiting():
    results = [{"scenario": "a", "verdict": "reproduced",
                "figures": {"runs": [{"cpu_busy": 0.4}], "cpu_busy_judged": 0.7,
                            "waiting": {"worst": ["ovs-vswitchd", 0.05]}}},
               {"scenario": "b", "verdict": "invalid", "figures": {
                   "cpu_busy": 0.95, "attempts": [{"verdict": "invalid"}, {"verdict": "invalid"}]}}]
    got = headroom.rows(results)
    assert got["a"] == {"verdict": "reproduced", "reproduced": True, "attempts": 1, "busy": 0.7,
                        "wait": ("ovs-vswitchd", 0.05)}
    assert got["b"] == {"verdict": "invalid", "reproduced": False, "attempts": 2, "busy": None,
                        "wait": None}


def test_headroom_counts_a_repeated_scenario_reproduced_only_when_every_run_was():
    run = lambda verdict, busy: {"scenario": "a", "verdict": verdict,   # noqa: E731
                                 "figures": {"cpu_busy": [busy], "cpu_busy_judged": busy}}
    summaries = [{"scenario": "a", "results": [run("reproduced", 0.5), run("reproduced", 0.6)]},
                 {"scenario": "b", "results": [run("reproduced", 0.5), run("invalid", 0.95)]}]
    got = headroom.rows(summaries)
    shown = {n: (got[n]["verdict"], got[n]["busy"], got[n]["reproduced"]) for n in got}
    assert shown == {"a": ("2 of 2 reproduced", 0.6, True), "b": ("1 of 2 reproduced", 0.95, False)}


@pytest.mark.parametrize("cores, loops", [(0, []), (0.5, [0.5]), (1, [1.0]), (2, [1.0, 1.0]),
                                          (1.5, [1.0, 0.5])])
def test_a_neighbour_is_one_busy_loop_per_core_it_takes(cores, loops):
    assert headroom.duties(cores) == loops


def test_the_neighbours_loops_are_children_that_are_gone_when_the_block_ends():
    with headroom.Neighbour(1.2) as load:
        assert len(load.procs) == 2 and all(p.poll() is None for p in load.procs)
    assert all(p.returncode is not None for p in load.procs)


def test_passes_are_named_by_their_neighbour():
    assert [headroom.pass_name(c, 2) for c in (0, 0.5, 1, 2)] == ["idle", "0.5 core", "1 core",
                                                                  "2 cores (all)"]
    assert headroom.parse_neighbour("all", 2) == 2.0
    with pytest.raises(ValueError):
        headroom.parse_neighbour("3", 2)


def test_a_pass_reads_the_results_out_of_run_json_envelope(monkeypatch, tmp_path):
    # what `hpn-testbed run --json` prints: an envelope whose "result" is the list of results
    envelope = ('{"hpn_testbed": 1, "command": "run", "ok": true, '
                '"result": [{"scenario": "a", "verdict": "reproduced"}]}')
    monkeypatch.setattr(headroom.sh, "testbed_run",
                        lambda *a, **k: subprocess.CompletedProcess(a, 0, envelope, ""))
    results, _ = headroom.run_pass(["a"], tmp_path, full=False)
    assert headroom.rows(results)["a"]["reproduced"] is True
    assert "a" in headroom.summary("idle", headroom.rows(results))


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
    for argv in (["--mtu", "1500", "9001"], ["--neighbour", "9"], ["--neighbour", "x"]):
        monkeypatch.setattr(sys, "argv", ["headroom.py", *argv])
        with pytest.raises(SystemExit) as exit_:
            headroom.main()
        assert exit_.value.code == 2 and capsys.readouterr().err.count("\n") == 1


def test_a_pass_at_an_mtu_runs_with_hpn_mtu_set(monkeypatch, tmp_path):
    seen = {}

    def fake_run(argv, **kw):
        seen.update(kw["env"])
        return subprocess.CompletedProcess(argv, 0, '{"result": []}', "")
    monkeypatch.setattr(headroom.sh, "testbed_run", fake_run)
    headroom.run_pass(["a"], tmp_path, full=False, mtu=9000)
    assert seen["HPN_MTU"] == "9000" and headroom.pass_name(1, 2, 9000) == "1 core@9000"
