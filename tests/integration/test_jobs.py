"""Users' own distributed programs on the fabric (docs/jobs.md): the torch.distributed all-reduce
example runs one rank per host on the rail-0 NICs of the default HPN fabric, every rank's log
kept and nccl-tests' rows printed; a rank that fails makes the job fail (exit 1, the rank and its
last line named), the others are stopped and nothing is left behind. The MPI example runs the same
way under mpirun on single-ToR HPN (Open MPI needs each NIC on an interface of its own)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.core.wait import wait_for
from testbed.emulation.net import netdevs
from testbed.emulation.run import runstate
from testbed.workload.jobrun import run_job
from testbed.workload.jobs import Job, place

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "jobs"
GIVES_UP = ("import os, sys, time\n"
            "if os.environ['RANK'] == '2':\n"
            "    print('starting'); print('rank 2 gives up', file=sys.stderr); sys.exit(1)\n"
            "time.sleep(120)")


def test_torch_allreduce_on_rail_zero(up, tmp_path):
    emu = up("hpn")
    job = Job("{python} allreduce_torch.py --sizes 4K,16K --iters 2", name="allreduce",
              rails=(0,), env=(("OMP_NUM_THREADS", "1"),), timeout=240)
    result = run_job(emu, job, out=tmp_path, cwd=EXAMPLES)
    assert result.ok, result.line()
    assert [(r.nic, r.status) for r in result.ranks] == [(f"{h}-n0", "ok") for h in emu.fabric.hosts]
    for r in range(4):
        assert (tmp_path / f"rank{r}.out").is_file() and (tmp_path / f"rank{r}.err").is_file()
    rows = [l.split() for l in (tmp_path / "rank0.out").read_text().splitlines()
            if l.strip() and not l.lstrip().startswith(("#", "size"))]
    assert [int(row[0]) for row in rows] == [4096, 16384]
    assert all(float(row[4]) == pytest.approx(float(row[3]) * 2 * 3 / 4, rel=0.01, abs=1e-4)
               for row in rows)      # busbw = algbw * 2 (n - 1) / n
    assert json.loads((tmp_path / "job.json").read_text())["ok"] is True


def failing_job(tmp_path: Path, script: str, text: str, fabric: str = "", job: str = "") -> list:
    """`hpn-testbed job` on a file whose rank 2 runs `text` and gives up: exit 1, the rank and its
    last line named, the run and its bridges gone. Returns job.json's ranks."""
    (tmp_path / script).write_text(text)       # `script`: a name only this test's ranks have
    (tmp_path / "fail.toml").write_text(f'[fabric]\nfamily = "hpn"\n{fabric}[[job]]\nname = "fail"\n'
                                        f'{job}command = "{{python}} {script}"\ntimeout = 60\n')
    proc = subprocess.run([sys.executable, "-m", "testbed", "job", str(tmp_path / "fail.toml"),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    line = " ".join(proc.stdout.split())
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    assert "job fail: rank 2 (p1s0h0-n0) exited 1" in line and "rank 2 gives up" in line, line
    assert not [s.run_id for s in runstate.runs() if s.data["owner"][0] == proc.pid]
    assert not {"p0s0h0", "p0s0r0t0"} & netdevs.all_bridges()
    return json.loads((tmp_path / "out" / "fail" / "job.json").read_text())["ranks"]


def none_left(*how: str) -> bool:
    """No process that `pgrep HOW...` finds."""
    return not subprocess.run(["pgrep", *how], capture_output=True, text=True).stdout.strip()


def test_a_failing_rank_fails_the_job_and_leaves_nothing(tmp_path):
    script = f"gives_up_{os.getpid()}.py"
    ranks = failing_job(tmp_path, script, GIVES_UP)
    assert [r["status"] for r in ranks] == ["stopped", "stopped", "exit 1", "stopped"]
    assert none_left("-f", script)


def _rows(path: Path) -> list[list[str]]:
    return [l.split() for l in path.read_text().splitlines()
            if l.strip() and not l.lstrip().startswith(("#", "size"))]


def test_mpi_allreduce_under_mpirun_without_sshd(up, tmp_path):
    emu = up("hpn", single_tor=True)
    job = Job("{python} allreduce_mpi.py --sizes 4K,16K --iters 2", name="allreduce-mpi",
              rails=(0,), launcher="mpi", timeout=240)
    result = run_job(emu, job, out=tmp_path, cwd=EXAMPLES)
    assert result.ok, result.line() + (tmp_path / "mpirun.err").read_text()[-2000:]
    assert [(r.nic, r.status) for r in result.ranks] == [(f"{h}-n0", "ok") for h in emu.fabric.hosts]
    assert f"{emu.fabric.nic('p0s0h1-n0').ip} slots=1" in \
        (tmp_path / "hostfile").read_text()
    assert f"btl_tcp_if_include {','.join(r.ifname for r in place(job, emu.fabric, emu.bond))}" in \
        (tmp_path / "mpirun.cmd").read_text()
    for r in range(4):
        assert (tmp_path / f"rank{r}.out").is_file() and (tmp_path / f"rank{r}.rc").read_text() == "0\n"
    rows = _rows(tmp_path / "rank0.out")
    assert [int(row[0]) for row in rows] == [4096, 16384]
    assert all(float(row[4]) == pytest.approx(float(row[3]) * 2 * 3 / 4, rel=0.01, abs=1e-4)
               for row in rows)      # busbw = algbw * 2 (n - 1) / n
    print("\n".join((tmp_path / "rank0.out").read_text().splitlines()))


def test_a_failing_mpi_rank_fails_the_job_and_leaves_nothing(tmp_path):
    script = f"mpi_gives_up_{os.getpid()}.py"
    # a rank that dies: out without MPI_Finalize, which would wait for its peers (docs/jobs.md)
    text = "from mpi4py import MPI\n" + GIVES_UP.replace(
        "os.environ['RANK']", "str(MPI.COMM_WORLD.Get_rank())").replace(
        "sys.exit(1)", "sys.stdout.flush(); sys.stderr.flush(); os._exit(1)")
    ranks = failing_job(tmp_path, script, text, fabric="single_tor = true\n", job='launcher = "mpi"\n')
    assert ranks[2]["status"] == "exit 1" and all(r["status"] != "ok" for r in ranks), ranks
    for how in (["-f", script], ["-x", "orted"], ["-x", "mpirun"]):   # gone (a killed one's
        wait_for(f"no {how[-1]} left", lambda how=how: none_left(*how), 5)   # last instants aside)
