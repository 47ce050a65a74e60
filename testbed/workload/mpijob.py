"""Run an MPI job (launcher = "mpi") on a running emulation: mpirun in rank 0's host, its daemons
started in every other host by our launch agent (mpi.py says how), every rank's stdout, stderr
and exit status kept as a direct job keeps them, the whole bounded by the job's timeout.

mpirun is spawned by rank 0's host (recorded in the run state: the teardown ends it by its PID);
the daemons and ranks it starts in the other hosts are its own, and it ends them when the job
ends or fails (Open MPI aborts the job when a rank exits non-zero); any left behind are ended by
the teardown with every other process in a host's namespace that the run did not record.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from testbed.core.errors import TestbedError
from testbed.workload import mpi
from testbed.workload.jobresult import POLL_S, RankResult, last_line
from testbed.workload.jobs import Job, Rank


def available() -> str | None:
    """Why MPI jobs cannot run here, or None (Open MPI's mpirun and Mininet's mnexec found)."""
    missing = [b for b in ("mpirun", "mnexec") if shutil.which(b) is None]
    if missing:
        return (f"{' and '.join(missing)} not found: MPI jobs need Open MPI "
                f"(scripts/install.sh installs openmpi-bin)")
    return None


def run(emu, job: Job, ranks: list[Rank], directory: Path, cwd) -> tuple[list[RankResult], str]:
    """Run `ranks` under mpirun; (each rank's result, what mpirun itself said when it failed
    without a rank to blame, else ''). TestbedError, one line, before anything starts, where
    Open MPI is missing."""
    problem = available()
    if problem:
        raise TestbedError(problem)
    for rank in ranks:
        (directory / f"rank{rank.rank}.rc").unlink(missing_ok=True)
    (directory / "hostfile").write_text(mpi.hostfile(ranks))
    argv = mpi.mpirun_argv(ranks, directory / "hostfile", directory, sys.executable,
                           shutil.which("mpirun"))
    (directory / "mpirun.cmd").write_text(mpi.describe(argv) + "\n")
    host = emu.net[ranks[0].host]
    env = {**os.environ, "PYTHONUNBUFFERED": "1",
           **mpi.launcher_env(ranks, {r.host: emu.net[r.host].pid for r in ranks})}
    wall, start = time.time(), time.monotonic()
    with open(directory / "mpirun.out", "wb") as out, open(directory / "mpirun.err", "wb") as err:
        proc = host.spawn(argv, "mpirun", stdout=out, stderr=err, env=env, cwd=cwd)
    timed_out = False
    while proc.poll() is None:
        if time.monotonic() - start > job.timeout:
            timed_out = True
            host.stop(proc, "mpirun")
            break
        time.sleep(POLL_S)
    seconds = time.monotonic() - start
    results = [_result(rank, directory, wall, seconds, timed_out) for rank in ranks]
    note = ""
    if not timed_out and proc.returncode != 0 and all(r.status in ("ok", "stopped") for r in results):
        note = (f"mpirun exited {proc.returncode}: "
                f"{last_line(directory / 'mpirun.err') or last_line(directory / 'mpirun.out')}")
    return results, note


def _result(rank: Rank, directory: Path, wall: float, seconds: float, timed_out: bool) -> RankResult:
    rc = directory / f"rank{rank.rank}.rc"
    text = rc.read_text() if rc.is_file() else None
    status, code = mpi.rank_end(text)
    if status == "stopped" and timed_out:
        status = "timeout"
    took = rc.stat().st_mtime - wall if text is not None else seconds
    out, err = f"rank{rank.rank}.out", f"rank{rank.rank}.err"
    started = (directory / out).exists()    # its wrapper opened its logs: Open MPI launched it
    for name in (out, err):
        (directory / name).touch()       # a rank that never started still has its (empty) logs
    said = last_line(directory / err) or last_line(directory / out)
    if not started and status == "timeout":  # stuck in Open MPI's launch, before the program
        said = f"never started (mpirun's last line: {last_line(directory / 'mpirun.err') or 'none'})"
    return RankResult(rank.rank, rank.host, rank.nic, status, code, round(max(0.0, took), 3),
                      said, out, err)
