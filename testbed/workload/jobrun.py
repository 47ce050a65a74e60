"""Run a Job (jobs.py) on a running emulation: every rank started in its host, its stdout, stderr
and exit status kept, the whole bounded by the job's timeout.

Ranks are spawned by their hosts (FabricHost.spawn: recorded in the run state, so the teardown
ends any rank still running by its PID). A job fails as torchrun's would: the first rank to
exit non-zero (or be killed by a signal) fails it, and the others are given a moment to end by
themselves, then stopped. A failed job is the job's failure, said in a line naming the rank and
its last line of output; the fabric under it is torn down as always.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time
from pathlib import Path

from testbed.emulation.build import Emulation
from testbed.workload.jobresult import POLL_S, JobResult, RankResult, last_line
from testbed.workload.jobs import Job, Rank, place

FAIL_GRACE_S = 3.0      # after one rank fails, how long the others may take to end by themselves
PORT_TRIES = 100


def free_port(emu, host: str, start: int) -> int:
    """The first TCP port from `start` that nothing listens on in `host` (two jobs rendezvous on
    one port: the second would abort). Asked with a process of its own in the host's namespace,
    not through the host's shell: an experiment's jobs start together, each in a thread, and a
    Mininet shell takes one command at a time."""
    ss = emu.net[host].popen(["ss", "-Hltn"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True)
    try:
        listing, _ = ss.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        ss.kill()
        ss.communicate()
        listing = ""
    taken = {int(local.rpartition(":")[2]) for local in (line.split()[3] for line in listing.splitlines()
                                                         if len(line.split()) > 3)
             if local.rpartition(":")[2].isdigit()}
    return next((port for port in range(start, min(start + PORT_TRIES, 65536)) if port not in taken),
                start)


def run_job(emu: Emulation, job: Job, out: str | Path | None = None,
            cwd: str | Path | None = None) -> JobResult:
    """Run `job` on `emu`; its ranks' logs and job.json go to `out` (default: jobs/NAME in the run
    directory, which goes with the run unless kept). `cwd`: where the ranks start (default ours)."""
    port = free_port(emu, place(job, emu.fabric)[0].host, job.master_port)
    ranks = place(dataclasses.replace(job, master_port=port), emu.fabric)
    directory = Path(out) if out is not None else emu.state.dir / "jobs" / job.name
    directory.mkdir(parents=True, exist_ok=True)
    start, note = time.monotonic(), ""
    if job.launcher == "mpi":
        from testbed.workload import mpijob
        results, note = mpijob.run(emu, job, ranks, directory, cwd)
    else:
        procs = [_start(emu, rank, directory, cwd) for rank in ranks]
        ended = _wait(emu, ranks, procs, start, job.timeout)
        results = [_result(rank, proc, ended[rank.rank], directory, start)
                   for rank, proc in zip(ranks, procs)]
    result = JobResult(job.name, not note and all(r.status == "ok" for r in results),
                       time.monotonic() - start, str(directory), results, note)
    (directory / "job.json").write_text(json.dumps(result.as_dict(), indent=2) + "\n")
    return result


def _start(emu, rank: Rank, directory: Path, cwd):
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **rank.env}
    with open(directory / f"rank{rank.rank}.out", "wb") as out, \
            open(directory / f"rank{rank.rank}.err", "wb") as err:
        return emu.net[rank.host].spawn(list(rank.argv), rank.argv[0], stdout=out, stderr=err,
                                        env=env, cwd=cwd)


def _wait(emu, ranks: list[Rank], procs: list, start: float, timeout: float) -> dict[int, tuple]:
    """Poll until every rank ends, the timeout passes, or a failed rank's grace runs out; stop
    what is left. rank -> (status override or None, seconds at its end)."""
    ended: dict[int, tuple] = {}
    failed_at = None
    while len(ended) < len(procs):
        now = time.monotonic()
        for rank, proc in zip(ranks, procs):
            if rank.rank not in ended and proc.poll() is not None:
                ended[rank.rank] = (None, now - start)
                if proc.returncode != 0 and failed_at is None:
                    failed_at = now
        timed_out = now - start > timeout
        if timed_out or (failed_at is not None and now - failed_at > FAIL_GRACE_S):
            for rank, proc in zip(ranks, procs):
                if rank.rank not in ended:
                    emu.net[rank.host].stop(proc, rank.argv[0])
                    ended[rank.rank] = ("timeout" if timed_out else "stopped", now - start)
            break
        time.sleep(POLL_S)
    return ended


def _result(rank: Rank, proc, ended: tuple, directory: Path, start: float) -> RankResult:
    override, seconds = ended
    code = proc.returncode
    status = override or ("ok" if code == 0 else f"exit {code}" if code > 0 else f"signal {-code}")
    out, err = f"rank{rank.rank}.out", f"rank{rank.rank}.err"
    return RankResult(rank.rank, rank.host, rank.nic, status, code, round(seconds, 3),
                      last_line(directory / err) or last_line(directory / out), out, err)
