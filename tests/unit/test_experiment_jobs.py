"""[[job]] in experiment files without a fabric: read with the job files' rules (one place), a bad
placement one line and exit 2 under `run --check` without root; a job's result judged (a failed
job: "job failed", exit 1, the job named); the benchmark rows a rank prints read back, each with
the fluid model's bound for the placement (testbed/workload/benchrows.py)."""
from pathlib import Path

import pytest

from testbed.cli import main
from testbed.cli.attempts import exit_status
from testbed.experiments import check
from testbed.experiments.runner import Experiment
from testbed.model import make_fabric
from testbed.workload import benchrows
from testbed.workload.jobs import Job, place

ROOT = Path(__file__).resolve().parents[2]
JOB = '[fabric]\nfamily = "hpn"\n[[job]]\nname = "ar"\ncommand = "{python} x.py"\nrails = [0]\n'
FAULT = '[[fault]]\nkind = "link-down"\nat = 5\nfor = 5\nport = "p0s0h0-n0p0"\n'


def write(tmp_path, text: str) -> str:
    path = tmp_path / "x.toml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("name", ["allreduce_torch.toml", "allreduce_torch_fault.toml",
                                  "allreduce_mpi.toml"])
def test_the_job_examples_are_experiment_files(name):
    spec = check.load(str(ROOT / "examples" / "jobs" / name))
    assert len(spec.jobs) == 1 and spec.traffic == ()
    assert spec.throughput == ("p0s0h0-n0",)         # rank 0's NIC, watched by default


def test_a_job_with_a_fault_timeline(tmp_path):
    spec = check.load(write(tmp_path, JOB + FAULT))
    (job,) = spec.jobs
    assert (job.name, job.rails, job.master_port) == ("ar", (0,), 29500)
    assert [f.label for f in spec.faults] == ["link-down p0s0h0-n0p0"]


@pytest.mark.parametrize("extra, message", [
    ("rails = [5]\n", ":6: [[job]] 1: rails: rail 5 does not exist on host p0s0h0"),
    ("ranks = 9\n", ":6: [[job]] 1: ranks: ranks=9: more ranks than hosts"),
    ("colour = 1\n", ":6: [[job]] 1: colour: unknown key"),
])
def test_a_bad_job_is_one_line_and_exit_2_under_check(tmp_path, capsys, extra, message):
    path = write(tmp_path, JOB.replace('rails = [0]\n', '') + extra)
    assert main(["run", path, "--check"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{path}{message}" in err, err


def test_a_file_needs_traffic_or_a_job(tmp_path):
    path = write(tmp_path, '[fabric]\nfamily = "hpn"\n')
    assert main(["run", path, "--check"]) == 2


def job_figures(ok: bool) -> dict:
    line = ("job ar: 4 ranks exited 0 in 9.0 s" if ok else
            "job ar: rank 2 (p1s0h0-n0) exited 1 after 4.1 s: boom [logs: out/x.jobs/ar]")
    row = {"kind": "allreduce", "size": 65536, "time_us": 1.0, "algbw_mbit": 0.9, "busbw_mbit": 1.28,
           "bound_mbit": 1.333, "of_bound": 0.96}
    return {"throughput": {}, "queues": {}, "traffic_s": 10, "cpu_busy": 0.99,
            "traffic": [{"type": "job", "where": "[[job]] 1", "job": "ar", "ok": ok, "line": line,
                         "rows": [row] if ok else []}]}


def test_a_failed_job_is_the_jobs_failure_named_with_exit_1(tmp_path):
    experiment = Experiment(check.load(write(tmp_path, JOB)))
    judged = experiment.judge(job_figures(False))
    assert judged.verdict == "job failed"        # not invalid, though the CPU was busy
    assert judged.headline.startswith("job ar: rank 2 (p1s0h0-n0) exited 1") and "boom" in judged.headline
    assert exit_status([experiment.report(job_figures(False))]) == 1


def test_a_job_that_ran_says_its_rows_beside_the_bound(tmp_path):
    experiment = Experiment(check.load(write(tmp_path, JOB)))
    judged = experiment.judge({**job_figures(True), "cpu_busy": 0.3})
    assert judged.verdict == "measured" and judged.headline == "job ar: 4 ranks exited 0 in 9.0 s"
    assert "allreduce 65536 B busbw 1.28 Mbit/s (bound 1.333: 96%)" in judged.measured


def test_rows_are_read_from_a_ranks_output():
    text = ("# allreduce over 4 ranks\n# collective size (B) count time (us) algbw busbw\n"
            "allreduce 4096 1024 10.5 3.2 4.8\nnoise\nalltoall 65536 16384 2.0 6.0 4.5\n"
            "allreduce x 1 2 3 4\n")
    assert benchrows.rows(text) == [benchrows.Row("allreduce", 4096, 10.5, 3.2, 4.8),
                                    benchrows.Row("alltoall", 65536, 2.0, 6.0, 4.5)]


def test_the_bound_is_the_slowest_link_the_ring_crosses():
    """Across the pods every step crosses the 15:1 core; within a pod, the NICs' links."""
    fab = make_fabric("hpn", {})
    core = min(fab.link_mbit(link) for link in fab.switch_links())
    across = benchrows.nics_of(fab, place(Job("x", rails=(0,)), fab))
    assert benchrows.bound_mbit(fab, "allreduce", across) == pytest.approx(core, abs=1e-3)
    assert benchrows.bound_mbit(fab, "sendrecv", across) == pytest.approx(core, abs=1e-3)
    assert benchrows.bound_mbit(fab, "alltoall", across) == pytest.approx(core, abs=1e-3)   # pairwise
    pod = benchrows.nics_of(fab, place(Job("x", rails=(0,), hosts=("p0s0h0", "p0s0h1")), fab))
    line = min(fab.link_mbit(link) for link in fab.host_links())
    assert benchrows.bound_mbit(fab, "allreduce", pod) == pytest.approx(line, abs=1e-3)
    assert benchrows.bound_mbit(fab, "allreduce", pod[:1]) is None


def test_the_schema_knows_the_job_tables():
    import json

    import jsonschema

    from testbed.core.compat import tomllib
    from testbed.experiments.jobtables import JOB_KEYS
    schema = json.loads((ROOT / "docs" / "experiment.schema.json").read_text())
    assert tuple(schema["$defs"]["job"]["properties"]) == JOB_KEYS
    for path in (ROOT / "examples" / "jobs").glob("*.toml"):
        jsonschema.validate(tomllib.loads(path.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"fabric": {"family": "hpn"}}, schema)


def test_job_prints_each_row_beside_its_bound(capsys):
    from testbed.cli.job import print_rows
    print_rows([{"kind": "allreduce", "size": 65536, "time_us": 650886.4, "algbw_mbit": 0.805,
                 "busbw_mbit": 1.208, "bound_mbit": 1.333, "of_bound": 0.906}])
    out = capsys.readouterr().out
    assert "1.208" in out and "1.333" in out and "91%" in out
    print_rows([])
    assert capsys.readouterr().out == ""


def test_a_collectives_result_is_no_job_s():
    """A collective traffic item's result names its job too: only a [[job]]'s entry is a job's
    (a file with an allreduce item failed in judge() on the job's missing 'line')."""
    from testbed.experiments.traffic.load import is_job
    collective = {"job": "allreduce-0", "kind": "allreduce", "size": 4000000, "ranks": 4}
    assert not is_job(collective) and is_job({"type": "job", "job": "j", "rows": []})
