"""An MPI job's launch (testbed/workload/mpi.py, mpiagent.py): the hostfile, mpirun's command
line and MCA parameters from the placement, the launch agent's command, and each rank's end read
back from its wrapper's files. Pure: no root, no MPI."""
import subprocess

import pytest

from testbed.model import make_fabric
from testbed.workload import mpi, mpiagent
from testbed.workload.jobs import Job, place


@pytest.fixture(scope="module")
def hpn():
    return make_fabric("hpn", {})      # 2 pods x 2 hosts, 2 NICs on 2 rails, dual-ported


def test_the_hostfile_gives_each_host_its_ranks_as_slots(hpn):
    ranks = place(Job("run", rails=(0,)), hpn)
    assert mpi.hostfile(ranks) == "".join(f"{r.addr} slots=1\n" for r in ranks)
    ranks = place(Job("run", per="nic", hosts=("p0s0h1", "p1s0h0")), hpn)
    assert mpi.nodes(ranks) == {"p0s0h1": ranks[0].addr, "p1s0h0": ranks[2].addr}
    assert mpi.hostfile(ranks) == f"{ranks[0].addr} slots=2\n{ranks[2].addr} slots=2\n"


def test_mca_names_each_nics_interface(hpn):
    ranks = place(Job("run", rails=(0,)), hpn)     # dual-ToR: each NIC's bond or link, its name
    params = mpi.mca(ranks)
    assert params["btl_tcp_if_include"] == "p0s0h0-n0,p0s0h1-n0,p1s0h0-n0,p1s0h1-n0"
    assert params["oob_tcp_if_include"] == ",".join(f"{r.addr}/32" for r in ranks)
    assert params["btl"] == "tcp,self" and "btl_tcp_if_exclude" not in params   # exclusive
    single = place(Job("run", rails=(0,)), make_fabric("hpn", {"single_tor": True}))
    assert mpi.mca(single)["btl_tcp_if_include"].split(",")[0] == "p0s0h0-n0p0"   # its port


def test_mpirun_runs_each_rank_in_its_own_app_context_and_wrapper(hpn):
    ranks = place(Job("{python} a.py --rank {rank}", rails=(0,), env=(("X", "{host}"),)), hpn)
    argv = mpi.mpirun_argv(ranks, "/d/hostfile", "/d", "/py", mpirun="/usr/bin/mpirun")
    assert argv[:6] == ["/usr/bin/mpirun", "--hostfile", "/d/hostfile", "--mca", "plm_rsh_agent",
                        f"/py {mpi.AGENT}"]
    contexts = " ".join(argv).split(" : ")
    assert len(contexts) == 4
    third = argv[[i for i, w in enumerate(argv) if w == ":"][1] + 1:]
    third = third[:third.index(":")]
    assert third[:8] == ["-np", "1", "--host", ranks[2].addr, "sh", "-c", mpi.WRAPPER, "/d/rank2"]
    assert "env" == third[8] and "RANK=2" in third and "X=p1s0h0" in third
    assert f"OMPI_MCA_btl_tcp_if_include={ranks[2].ifname}" in third
    assert tuple(third[-4:]) == ranks[2].argv


def test_the_wrapper_keeps_output_and_exit_status(tmp_path):
    base = tmp_path / "rank1"
    code = subprocess.run(["sh", "-c", mpi.WRAPPER, str(base), "sh", "-c",
                           "echo out; echo err >&2; exit 3"]).returncode
    assert code == 3
    assert (base.with_suffix(".out").read_text(), base.with_suffix(".err").read_text(),
            base.with_suffix(".rc").read_text()) == ("out\n", "err\n", "3\n")


@pytest.mark.parametrize("text, end", [
    ("0\n", ("ok", 0)), ("1\n", ("exit 1", 1)), ("143\n", ("signal 15", -15)),
    (None, ("stopped", None)), ("", ("stopped", None))])
def test_a_ranks_end_from_its_rc_file(text, end):
    assert mpi.rank_end(text) == end


def test_the_agent_enters_the_named_host_and_refuses_others():
    pids = mpiagent.host_pids("p0s0h0=123,p1s0h1=456,bad")
    assert pids == {"p0s0h0": 123, "p1s0h1": 456}
    assert mpiagent.command(["p1s0h1", "", "orted", "-mca", "x", '"y"'], pids) == \
        ["mnexec", "-a", "456", "/bin/sh", "-c", 'orted -mca x "y"']
    with pytest.raises(ValueError, match="host 'h9' is not one of this job's"):
        mpiagent.command(["h9", "orted"], pids)
    assert mpiagent.HOSTS_ENV == mpi.HOSTS_ENV
    ranks = place(Job("run", ranks=2), make_fabric("hpn", {}))
    env = mpi.launcher_env(ranks, {"p0s0h0": 123, "p0s0h1": 124})
    assert env[mpi.HOSTS_ENV] == f"{ranks[0].addr}=123,{ranks[1].addr}=124"
    assert env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"


def test_a_bad_launcher_is_one_line(hpn):
    from testbed.core.errors import ParamError
    with pytest.raises(ParamError, match=r"launcher='slurm': choose from direct, mpi"):
        place(Job("run", launcher="slurm"), hpn)


def test_a_rank_open_mpi_never_launched_says_so_when_the_job_times_out(hpn, tmp_path):
    """A rank whose wrapper never opened its logs (Open MPI's launch hung before it) is named as
    never started, with mpirun's last line; a started one keeps its own last line."""
    from testbed.workload import mpijob
    ranks = place(Job("{python} x.py", launcher="mpi", rails=(0,)), hpn)
    (tmp_path / "rank0.out").write_text("waiting for peers\n")
    (tmp_path / "mpirun.err").write_text("[host:1] plm:rsh: launching\n")
    started, never = (mpijob._result(r, tmp_path, 0.0, 60.0, True) for r in ranks[:2])
    assert (started.status, started.last_line) == ("timeout", "waiting for peers")
    assert (never.status, never.last_line) == \
        ("timeout", "never started (mpirun's last line: [host:1] plm:rsh: launching)")
    assert (tmp_path / "rank1.out").is_file() and (tmp_path / "rank1.err").is_file()
