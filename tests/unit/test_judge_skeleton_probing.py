"""skeleton-probing (C16): its judge on small made-up figures (one silent fault on the job's path,
one off it), the outage arithmetic and the seeded model (job, mesh, faults); no fabric, no root."""
import copy
import random

import pytest

from scenarios import get, scenario_class
from scenarios.claims import skeleton_probing as S
from testbed.core.errors import ParamError
from testbed.measure.probing import lost_rounds, outages
from testbed.scenario.base import INVALID, NOT_REPRODUCED, REPRODUCED

KNOBS = {"job_hosts": 4, "faults": 2, "interval": 0.02, "misses": 3, "hold": 1.0, "gap": 1.0, "seed": 7}
ON, OFF = ["p0a0", 3], ["p1a1", 2]


def probe(name, prober, path, lost=()):
    return {"name": name, "prober": prober, "src": "a", "dst": "b", "sport": 1, "dport": 2,
            "path": path, "in_model": True, "sent": 200, "lost": list(lost)}


def recorded():
    """Two skeleton paths, ten mesh paths, 4 s at 20 ms: fault 0 (one-way, on job0's path) from
    1 to 2 s, fault 1 (a drop rule off the job's paths, on mesh1's) from 3 to 4 s."""
    during0, during1 = range(50, 100), range(150, 200)
    probes = [probe("job0", "skeleton", [["p0e0", 3], ON], during0), probe("job1", "skeleton", [["p1e0", 3]]),
              probe("mesh0", "full mesh", [ON], during0), probe("mesh1", "full mesh", [OFF], during1)]
    probes += [probe(f"mesh{i}", "full mesh", [["c0", 1]]) for i in range(2, 10)]
    faults = [{"kind": "one-way", "egress": ON, "on_job_path": True, "silent": True, "affects": [ON]},
              {"kind": "drop-rule", "egress": OFF, "on_job_path": False, "silent": True, "affects": [OFF]}]
    return {"probes": probes, "faults": faults, "windows": [[1.0, 2.0], [3.0, 4.0]], "rounds": 200,
            "seconds": 4.0, "late_max_s": 0.003, "cpu_busy": 0.55,
            "setup": {"seed": 7, "knobs": KNOBS}, "series": {}}


def judge(figures):
    return scenario_class("skeleton_probing")().judge(figures)


def changed(edit):
    figures = copy.deepcopy(recorded())
    edit(figures)
    return judge(figures)


def test_reproduced():
    j = judge(recorded())
    assert j.verdict == REPRODUCED, j.measured
    sk, mesh = j.derived["skeleton"], j.derived["full_mesh"]
    assert sk["recall_job"] == 1.0 and sk["precision"] == 1.0 and sk["recall_all"] == 0.5
    assert mesh["recall_all"] == 1.0 and j.derived["cost_ratio"] == 0.2
    assert sk["detect_ms"] == {"0": 60}      # three 20 ms rounds lost from the fault's start


def test_localization_blames_what_failing_paths_share_and_healthy_ones_do_not():
    j = judge(recorded())
    sk, mesh = j.derived["skeleton"]["localized"], j.derived["full_mesh"]["localized"]
    # the skeleton's one failing path crosses p0e0:3 and the faulty link; no healthy path clears either
    assert sk["blamed"] == {"0": [ON, ["p0e0", 3]]}      # sorted
    assert (sk["precision"], sk["recall"], sk["exact"], sk["blamed_mean"]) == (0.5, 1.0, 0.0, 2.0)
    # the mesh's failing path crosses the faulty link alone: exact for both faults
    assert mesh["blamed"] == {"0": [ON], "1": [OFF]}
    assert (mesh["precision"], mesh["recall"], mesh["exact"]) == (1.0, 1.0, 1.0)
    assert "localized exactly: skeleton 0%, mesh 100%" in j.headline


def test_a_healthy_path_exonerates_the_links_it_shares_with_a_failing_one():
    def edit(f):
        f["probes"][1]["path"] = [["p0e0", 3]]      # job1 crosses job0's first link and loses nothing
    sk = changed(edit).derived["skeleton"]["localized"]
    assert sk["blamed"] == {"0": [ON]} and sk["exact"] == 1.0


def test_a_fault_no_probe_noticed_is_blamed_on_nothing():
    sk = changed(lambda f: f["probes"][0].update(lost=[])).derived["skeleton"]["localized"]
    assert sk["blamed"] == {} and sk["recall"] == 0.0 and sk["precision"] is None


def test_the_default_interval_meets_the_detection_target():
    """A silent fault must raise an alarm within DETECT_S: (misses + 1) intervals at worst."""
    k = get("skeleton-probing").configure({}, quick=True).knobs
    assert (k.misses + 1) * k.interval <= S.DETECT_S


def test_the_opposite_outcome_is_not_reproduced():
    # the skeleton probes a path the job does not take: the fault on the job's path goes unseen
    missed = changed(lambda f: f["probes"][0].update(lost=[], path=[["p0e0", 3]]))
    assert missed.verdict == NOT_REPRODUCED and missed.derived["skeleton"]["recall_job"] == 0.0
    # a job that talks to everyone: its skeleton is the mesh, nothing saved
    dense = changed(lambda f: f.update(probes=f["probes"][:4]))
    assert dense.verdict == NOT_REPRODUCED and dense.derived["cost_ratio"] == 1.0


def test_false_alarms_cost_precision():
    # job1 lost 5 rounds, no fault on it
    j = changed(lambda f: f["probes"][1].update(lost=list(range(110, 115))))
    assert j.derived["skeleton"]["precision"] == 0.5 and j.verdict == NOT_REPRODUCED


@pytest.mark.parametrize("edit", [
    lambda f: f.update(cpu_busy=0.95),                                        # the CPU set the pace
    lambda f: f.update(late_max_s=0.05),                                      # the prober fell behind
    lambda f: f["probes"][2].update(in_model=False),                          # a trace off the model's paths
    lambda f: [p.update(lost=list(range(40))) for p in f["probes"][4:]],       # lost with no fault in place
    lambda f: f["faults"][0].update(on_job_path=False),                       # nothing on the job's paths
    lambda f: f["faults"][0].update(kind="link-down", silent=False),          # only a link down there
])
def test_invalid(edit):
    assert changed(edit).verdict == INVALID


def test_outages_are_runs_of_misses():
    assert outages([3, 4, 5, 9, 10, 20, 21, 22, 23], 3) == [(3, 5), (20, 23)]
    assert outages([], 1) == []
    assert lost_rounds([0, 1, 3], 5) == [2, 4]


def test_seeded_model():
    sc = get("skeleton-probing").configure({"seed": "7"}, quick=True)
    fab, k = sc.fabric(), sc.knobs
    job = S.job_probes(fab, k, random.Random(7))
    assert len(job) == 4 and [p.dst.host for p in job] == [p.src.host for p in job[1:] + job[:1]]
    assert len(S.mesh_probes(fab, random.Random(7))) == 8 * 7
    assert [p.sport for p in S.job_probes(fab, k, random.Random(7))] == [p.sport for p in job]
    used = {(l.a, l.a_port) for l in fab.switch_links()[:4]}     # four cables the job crosses upward
    plan = S.choose_faults(fab, used, 6, random.Random(1))
    assert sum(f["on_job_path"] for f in plan) == 3
    assert len({frozenset(map(tuple, f["affects"])) for f in plan}) == 6
    for f in plan:
        assert bool(set(map(tuple, f["affects"])) & used) == f["on_job_path"]
    assert any(f["on_job_path"] and f["silent"] for f in plan)


def test_refuses_meaningless_parameters():
    with pytest.raises(ParamError, match="job_hosts=8"):
        get("skeleton-probing").configure({"job_hosts": "8"})
    with pytest.raises(ParamError, match="misses x interval"):
        get("skeleton-probing").configure({"interval": "0.2", "misses": "3", "hold": "1"})
