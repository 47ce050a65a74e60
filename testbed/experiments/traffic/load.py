"""The file's traffic on a running emulation: each item run by its kind (Traffic.runner), prepared
before the experiment's clock starts (iperf3's servers), begun at its `start`, waited for; and
each [[job]] (testbed/workload/jobrun.py) begun at t = 0 beside them, the faults playing while it
runs."""
from __future__ import annotations

import threading
from pathlib import Path

from testbed.experiments.traffic.kind import Run


class Load:
    def __init__(self, emu, spec, jobs_out: Path | None = None):
        self.runs = [(t, t.runner(emu, n)) for n, t in enumerate(spec.traffic)]
        cwd = Path(spec.path).resolve().parent        # a job's command names files beside the file
        self.runs += [(job, JobRun(emu, job, f"[[job]] {k}", jobs_out, cwd))
                      for k, job in enumerate(spec.jobs, 1)]

    def servers(self) -> None:
        for _, run in self.runs:
            run.prepare()

    def schedule(self, timeline):
        """Every item on `timeline` (testbed.scenario.timeline.Schedule): each begins at its `start`."""
        for t, run in self.runs:
            timeline.action(getattr(t, "start", 0.0), run.begin)
        return timeline

    def wait(self) -> list[dict]:
        """Every item's results, in the file's order; the first error is raised once all ended."""
        results, error = [], None
        for _, run in self.runs:
            try:
                results += run.wait()
            except BaseException as e:  # noqa: BLE001 (raised below, once every item is waited for)
                error = error or e
        if error is not None:
            raise error
        return results


class JobRun(Run):
    """A [[job]] in a thread: its ranks' logs in `out`/NAME (default: the run directory's), its
    result as the job's line, each rank's status and the benchmark rows rank 0 printed, each with
    the fluid model's bound for the placement (testbed/workload/benchrows.py). A job that fails
    is a result, not an error: the experiment's report says so."""

    def __init__(self, emu, job, where: str, out: Path | None, cwd: Path):
        self.emu, self.job, self.where, self.cwd = emu, job, where, cwd
        self.out = None if out is None else Path(out) / job.name
        self.result = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def begin(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        from testbed.workload.jobrun import run_job
        try:
            self.result = run_job(self.emu, self.job, out=self.out, cwd=self.cwd)
        except BaseException as e:  # noqa: BLE001 (re-raised in the main thread by `wait`)
            self.result = e

    def wait(self) -> list[dict]:
        if self.thread.ident is None:
            return []
        self.thread.join()
        if isinstance(self.result, BaseException):
            raise self.result
        return [job_figures(self.emu.fabric, self.where, self.result)]


JOB = "job"     # a [[job]]'s entry among a run's traffic results (a collective's has a "job" too)


def is_job(entry) -> bool:
    """Is this entry of a run's traffic results a [[job]]'s?"""
    return isinstance(entry, dict) and entry.get("type") == JOB


def job_figures(fab, where: str, result) -> dict:
    """A job's entry in the run's traffic results: ok, its line, its ranks, its benchmark rows."""
    from testbed.workload import benchrows
    out = Path(result.directory) / "rank0.out"
    rows = benchrows.rows(out.read_text(errors="replace")) if out.is_file() else []
    nics = benchrows.nics_of(fab, result.ranks)
    bounds = {kind: benchrows.bound_mbit(fab, kind, nics) for kind in {r.kind for r in rows}}
    return {"type": JOB, "where": where, "job": result.name, "ok": result.ok, "line": result.line(),
            "seconds": round(result.seconds, 2), "directory": result.directory,
            "ranks": [{"rank": r.rank, "nic": r.nic, "status": r.status, "last_line": r.last_line}
                      for r in result.ranks],
            "rows": [{"kind": r.kind, "size": r.size, "time_us": r.time_us, "algbw_mbit": r.algbw_mbit,
                      "busbw_mbit": r.busbw_mbit, "bound_mbit": bounds[r.kind],
                      "of_bound": round(r.busbw_mbit / bounds[r.kind], 3) if bounds[r.kind] else None}
                     for r in rows]}
