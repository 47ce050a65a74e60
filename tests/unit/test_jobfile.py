"""Job files (testbed/experiments/jobfile.py) and `hpn-testbed job --check`: read and placed
without root, a bad file one line naming the file, line, [[job]] and key, exit 2; and the pure
parts of the runner's report (testbed/workload/jobrun.py)."""
import json
from pathlib import Path

import pytest

from testbed.cli import main
from testbed.core.errors import ParamError
from testbed.experiments import jobfile
from testbed.workload.jobresult import JobResult, RankResult, last_line

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "jobs" / "allreduce_torch.toml"
GOOD = '[fabric]\nfamily = "hpn"\n[[job]]\ncommand = "run {rank}"\n'


def write(tmp_path, text: str) -> str:
    path = tmp_path / "job.toml"
    path.write_text(text)
    return str(path)


def test_the_example_is_read_and_its_ranks_start_beside_it():
    spec = jobfile.load(str(EXAMPLE))
    (job,) = spec.jobs
    assert (job.name, job.per, job.rails, job.master_port) == ("allreduce", "host", (0,), 29500)
    assert spec.directory == str(EXAMPLE.parent)
    assert ("OMP_NUM_THREADS", "1") in job.env


def test_each_job_of_a_file_takes_its_own_port(tmp_path):
    spec = jobfile.load(write(tmp_path, GOOD + '[[job]]\ncommand = "b"\nper = "nic"\n'))
    assert [(j.name, j.master_port) for j in spec.jobs] == [("job1", 29500), ("job2", 29501)]


@pytest.mark.parametrize("extra, message", [
    ("rails = [5]\n", ":5: [[job]] 1: rails: rail 5 does not exist on host p0s0h0"),
    ("ranks = 5\n", ":5: [[job]] 1: ranks: ranks=5: more ranks than hosts"),
    ("per = 'gpu'\n", ":5: [[job]] 1: per: per='gpu': choose from nic, host"),
    ("hosts = ['x']\n", ":5: [[job]] 1: hosts: no host 'x'"),
    ("gpus = 1\n", ":5: [[job]] 1: gpus: unknown key"),
    ("timeout = 0\n", ":5: [[job]] 1: timeout: 0.0: must be between"),
    ("env = { A = true }\n", ":5: [[job]] 1: env: expected a table"),
    ("name = '../x'\n", ":5: [[job]] 1: name: '../x'"),
])
def test_bad_jobs_name_the_line_and_key(tmp_path, extra, message):
    path = write(tmp_path, GOOD + extra)
    with pytest.raises(ParamError) as e:
        jobfile.load(path)
    assert str(e.value).startswith(path + message), str(e.value)


def test_a_file_needs_a_fabric_and_a_job(tmp_path):
    with pytest.raises(ParamError, match="at least one \\[\\[job\\]\\] is required"):
        jobfile.load(write(tmp_path, '[fabric]\nfamily = "hpn"\n'))
    with pytest.raises(ParamError, match="fabric is required"):
        jobfile.load(write(tmp_path, '[[job]]\ncommand = "x"\n'))


def test_check_places_without_root(capsys):
    assert main(["job", str(EXAMPLE), "--check", "--json"]) == 0
    ranks = json.loads(capsys.readouterr().out)["result"]["jobs"]["allreduce"]
    assert [r["nic"] for r in ranks] == ["p0s0h0-n0", "p0s0h1-n0", "p1s0h0-n0", "p1s0h1-n0"]


def test_check_of_a_bad_placement_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["job", write(tmp_path, GOOD + "ranks = 5\n"), "--check"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "more ranks than hosts" in err


def rank(r, status, seconds, line=""):
    return RankResult(r, f"h{r}", f"h{r}-n0", status, 0 if status == "ok" else 1, seconds, line,
                      f"rank{r}.out", f"rank{r}.err")


def test_the_first_rank_to_fail_is_named_with_its_last_line():
    result = JobResult("j", False, 9.0, "/logs", [
        rank(0, "stopped", 9.0), rank(1, "exit 1", 5.0, "boom"), rank(2, "exit 1", 4.0, "first")])
    assert result.failed.rank == 2
    assert result.line() == "job j: rank 2 (h2-n0) exited 1 after 4.0 s: first [logs: /logs]"
    timed_out = JobResult("j", False, 9.0, "/logs", [rank(0, "timeout", 9.0)])
    assert "rank 0 (h0-n0) timed out after 9.0 s: (no output)" in timed_out.line()
    assert JobResult("j", True, 2.0, "/logs", [rank(0, "ok", 2.0)]).line() == \
        "job j: 1 rank exited 0 in 2.0 s"


def test_last_line_skips_blank_lines(tmp_path):
    log = tmp_path / "log"
    log.write_text("a\n" * 10000 + "Traceback\nValueError: bad\n\n  \n")
    assert last_line(log) == "ValueError: bad"
    log.write_text("")
    assert last_line(log) == ""


@pytest.mark.parametrize("how, says", [("world-writable", "may be written by other users"),
                                       ("another user's", "belongs to another user"),
                                       ("in a 777 directory", "its directory")])
def test_a_job_file_others_could_write_is_refused_as_a_plug_in_is(tmp_path, how, says):
    """Its commands run as root in the hosts (issue 39's rule for plug-ins, ssh's for keys)."""
    import os
    path = Path(write(tmp_path, GOOD))
    if how == "world-writable":
        path.chmod(0o666)
    elif how == "another user's":
        os.chown(path, 65534, 65534)        # the unit tests run as root, as test_plugins' do
    else:
        tmp_path.chmod(0o777)
    with pytest.raises(ParamError, match=f"{says}.*run as root"):
        jobfile.load(str(path))


def test_an_experiment_file_with_jobs_others_could_write_is_refused(tmp_path):
    """The same rule for an experiment file's [[job]] tables (testbed/experiments/jobtables.py)."""
    from testbed.experiments import check
    path = Path(write(tmp_path, GOOD))
    path.chmod(0o666)
    with pytest.raises(ParamError, match="may be written by other users.*run as root"):
        check.load(str(path))
