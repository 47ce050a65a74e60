"""C17: a real training job across a NIC-ToR link (or ToR) failure: single-ToR loses the job,
dual-ToR keeps it going (HPN's motivation, secs. 2-3, beyond the seeds' numbered claims).

The job is a user's program run as one (testbed/workload/jobrun.py): examples/jobs/
train_ddp_torch.py, torch DDP over gloo (CPU), a tiny model on synthetic data, one rank per host
of segment p0s0 on its rail-0 NIC; every step sleeps `compute` s (the model is tiny) and then
all-reduces the gradients, and each rank prints the end and duration of each step. Once rank 0
has printed the step `before` s into training, rank 0's NIC-ToR link (`kind=link`) or that
link's ToR (`kind=tor`) goes down for `fault` s, longer than the job's collective timeout
(`timeout`, gloo's: a collective that waits longer fails the rank); it is lifted early if the
job has ended.

Expected, judged from the job's own output: dual-ToR completes every step, no step that overlaps
the fault takes more than half the collective timeout (it never comes near failing; TCP moves
to the NIC's other port after a retransmission timeout or two) and the median step during the
fault is at most SLOWDOWN x the median before it. Single-ToR has no other port: the job makes no
progress while the link is down and either fails (a rank's collective times out or its
connection breaks: a non-zero exit after the fault began) or stalls for the whole fault (a step
of at least 0.8 x `fault` s).

Validity: the emulator's waiting (ovs-vswitchd, the controller, the ranks...) over each job's
training, from its first steps to its end, under the bound (testbed/measure/validity.py), the
machine's busy fraction reported beside it; the fault must
hit mid-training in both variants (the job reached the fault's step, ran normally before it: a
median step below a quarter of the timeout) and the dual-ToR job must not fail before the
fault; otherwise the run says why and gives no verdict.
"""
from __future__ import annotations

import math
import statistics
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from testbed.core import progress
from testbed.core.errors import ParamError
from testbed.emulation.control.controller import PROJECT
from testbed.emulation.factory import make_emulation
from testbed.emulation.faults.inject import Faults
from testbed.measure import waitlog
from testbed.measure.meters import CpuMeter
from testbed.scenario import fault_harness as harness
from testbed.scenario import plots
from testbed.scenario.base import Judgement, verdict
from testbed.scenario.fault_harness import BUSY, PEER
from testbed.scenario.knobs import Knobs
from testbed.workload.jobrun import run_job
from testbed.workload.jobs import Job
from testbed.workload.steps import steps_of

SCRIPT = PROJECT / "examples" / "jobs" / "train_ddp_torch.py"
HOSTS = (BUSY, PEER)         # rank 0 on BUSY, whose NIC 0 port 0 (or its ToR) fails
KINDS = ("link", "tor")
SLOWDOWN = 2.0               # dual-ToR: median step during the fault / before it, at most
SKIP = 2                     # the first steps carry DDP's start-up: not the baseline
START_S = 90.0               # what the ranks may take to start (import torch, rendezvous)
POLL_S = 0.05


@dataclass(frozen=True)
class TrainingKnobs(Knobs):
    before: float = 3.0
    fault: float = 8.0
    after: float = 3.0
    timeout: float = 4.0
    compute: float = 0.1
    kind: str = "link"
    QUICK: ClassVar[dict] = {"before": 2.0, "fault": 5.0, "after": 2.0, "timeout": 2.5}
    BOUNDS: ClassVar[dict] = {"before": (0.5, 60.0, "s"), "fault": (1.0, 120.0, "s"),
                              "after": (0.0, 60.0, "s"), "timeout": (1.0, 60.0, "s"),
                              "compute": (0.01, 2.0, "s per step")}
    HELP: ClassVar[dict] = {"before": "s of training before the fault",
                            "fault": "s the fault lasts (longer than timeout)",
                            "after": "s of training planned after the fault",
                            "timeout": "s a collective may wait before the rank fails (gloo's timeout)",
                            "compute": "s of (emulated) compute per step",
                            "kind": "what fails: link (rank 0's NIC-ToR link) or tor (that link's ToR)"}

    def rules(self) -> None:
        if self.kind not in KINDS:
            raise ParamError(f"kind={self.kind!r}: choose from {', '.join(KINDS)}")
        if self.fault < self.timeout + 1:
            raise ParamError(f"fault={self.fault}: must outlast timeout={self.timeout} by 1 s or more")
        if self.compute > self.timeout / 4:
            raise ParamError(f"compute={self.compute}: must be at most a quarter of timeout={self.timeout}")

    def steps(self) -> int:
        return math.ceil((self.before + self.fault + self.after) / self.compute)

    def fault_step(self) -> int:
        return max(SKIP + 2, round(self.before / self.compute))


def step_figures(rows: list, t_fault: float | None, t_repair: float | None) -> dict:
    """What rank 0's steps say: how many, the median before the fault, and the longest and median
    of the steps that overlap the fault (a step spans [end - duration, end])."""
    base = [d for s, t, d in rows[SKIP:] if t_fault is None or t <= t_fault]
    over = [] if t_fault is None else [d for s, t, d in rows if t >= t_fault and t - d <= t_repair]
    return {"done": len(rows), "base_step_s": round(statistics.median(base), 3) if base else None,
            "fault_longest_step_s": round(max(over), 3) if over else None,
            "fault_median_step_s": round(statistics.median(over), 3) if over else None,
            "steps_during_fault": len(over)}


def wait_step(path, step: int, running: threading.Thread) -> bool:
    """Poll rank 0's log until it has printed `step`; False if the job ended first."""
    while running.is_alive():
        if path.is_file() and any(s >= step for s, _, _ in steps_of(path.read_text())):
            return True
        time.sleep(POLL_S)
    return False


class TrainingFault(harness.FaultScenario, name="training-fault", claim="C17"):
    title = "a PyTorch training job through a link or ToR failure: dual-ToR vs single-ToR"
    paper = ("HPN secs. 2-3: with single-ToR access one NIC-ToR link or ToR failure stops a "
             "training job (it crashes at its collective timeout); dual-ToR keeps it running")
    Knobs = TrainingKnobs
    x_label = "end of step, s since the fault"
    y_label = "rank 0's step time (s)"

    def meaningful(self) -> None:
        super().meaningful()
        try:
            import torch.distributed  # noqa: F401
        except ImportError:
            self.refuse("needs PyTorch: pip install '.[torch]' (docs/jobs.md)")

    def setup(self, timeline=None) -> dict:
        k = self.knobs
        return {"fabric": "hpn; single_tor for the baseline", "hosts": list(HOSTS), "rail": 0,
                "script": str(SCRIPT.relative_to(PROJECT)), "steps": k.steps(),
                "fault_step": k.fault_step(), "x_label": self.x_label, "y_label": self.y_label}

    def run(self, quick: bool) -> dict:
        return harness.dual_and_single(self.variant, self.setup())

    def variant(self, single_tor: bool, timeline=None) -> dict:
        fab, k = self.fabric(single_tor=single_tor), self.knobs
        nic0, link = harness.first_link(fab)
        job = Job(f"{{python}} {SCRIPT} --steps {k.steps()} --compute {k.compute} --timeout {k.timeout}",
                  name="train", hosts=HOSTS, rails=(0,), env=(("OMP_NUM_THREADS", "1"),),
                  timeout=START_S + 3 * (k.before + k.fault + k.after))
        box: dict = {}
        with CpuMeter() as cpu, make_emulation(fab, servers=self.servers) as emu, Faults(emu) as faults, \
                ExitStack() as training:
            jobs = self.jobs_out or emu.state.dir / "jobs"       # OUT/STEM.jobs/ (execute)
            out = jobs / ("single-tor" if single_tor else "dual-tor")
            t_start = time.monotonic()
            thread = threading.Thread(target=self._job, args=(emu, job, out, box), daemon=True)
            thread.start()
            t_fault = t_repair = None
            with progress.phase(f"training: the ranks start; the fault at step {k.fault_step()}"):
                if wait_step(out / "rank0.out", SKIP, thread):   # from here on the steps are read:
                    training.enter_context(waitlog.run())        # the emulator's waiting too
                reached = wait_step(out / "rank0.out", k.fault_step(), thread)
            if reached:
                handle = faults.link_down(link) if k.kind == "link" else faults.switch_down(link.b)
                t_fault = time.monotonic()
                with progress.phase(f"training: {k.kind} down for {k.fault:g} s (or until the job ends)"):
                    while thread.is_alive() and time.monotonic() < t_fault + k.fault:
                        time.sleep(POLL_S)
                handle.repair()
                t_repair = time.monotonic()
            with progress.phase("training: until the job ends"):
                thread.join()
            training.close()
            if "error" in box:
                raise box["error"]
            result = box["result"]
            rows = {r.rank: steps_of((out / r.stdout).read_text()) for r in result.ranks}
            setup = emu.describe()
        failed = result.failed
        figures = step_figures(rows[0], t_fault, t_repair)
        return {**figures, "steps": k.steps(), "job_ok": result.ok, "job": result.line(),
                "done_all_ranks": min(len(r) for r in rows.values()),
                "fault_injected": t_fault is not None,
                "fault_s": None if t_fault is None else round(t_repair - t_fault, 2),
                "failed_after_fault_s": None if failed is None or t_fault is None
                else round(t_start + failed.seconds - t_fault, 2),
                "cpu_busy": cpu.busy([(t_start, time.monotonic())]),
                "target": link.a_intf if k.kind == "link" else link.b,
                "series": [[round(t - (t_fault or t_start), 3), d] for _, t, d in rows[0]], "setup": setup}

    @staticmethod
    def _job(emu, job, out, box) -> None:
        try:
            box["result"] = run_job(emu, job, out=out)
        except BaseException as e:      # raised again in the scenario's thread
            box["error"] = e

    def judge(self, figures: dict) -> Judgement:
        dual, single = figures["dual_tor"], figures["single_tor"]
        k = self.knobs_of(figures)
        steps = figures["setup"]["steps"]
        what = "rank 0's NIC-ToR link" if k.kind == "link" else "the ToR of rank 0's NIC port 0"
        problems = [f"{name}: {p}" for name, v in (("dual-ToR", dual), ("single-ToR", single))
                    for p in invalid(v, k)]
        dual_ok = (dual["job_ok"] and dual["done_all_ranks"] == steps
                   and (dual["fault_longest_step_s"] or 0) <= k.timeout / 2
                   and (dual["fault_median_step_s"] or 0) <= SLOWDOWN * (dual["base_step_s"] or 0))
        single_failed = not single["job_ok"] and single["failed_after_fault_s"] is not None \
            and single["failed_after_fault_s"] >= 0
        single_stalled = (single["fault_longest_step_s"] or 0) >= 0.8 * k.fault
        slowdown = harness.ratio(dual["fault_median_step_s"] or 0, dual["base_step_s"] or 0)
        measured = (f"dual-ToR: {dual['done_all_ranks']} of {steps} steps on every rank "
                    f"({'job ok' if dual['job_ok'] else dual['job']}), step {dual['base_step_s']} s "
                    f"before the fault, during it median {dual['fault_median_step_s']} s and longest "
                    f"{dual['fault_longest_step_s']} s over {dual['steps_during_fault']} steps; "
                    f"single-ToR: {single['done']} of {steps} steps, "
                    + (f"the job failed {single['failed_after_fault_s']} s after the fault began: "
                       f"{single['job']}" if not single["job_ok"] else
                       f"the job completed, longest step {single['fault_longest_step_s']} s")
                    + (f"; invalid: {'; '.join(problems)}" if problems else ""))
        return Judgement(
            verdict(dual_ok and (single_failed or single_stalled), not problems),
            expectation=(f"a DDP training job over gloo, one rank on the rail-0 NIC of each of "
                         f"{', '.join(HOSTS)}, {steps} steps of {k.compute} s compute; after "
                         f"{k.before:g} s of training {what} goes down for {k.fault:g} s, longer "
                         f"than the job's {k.timeout:g} s collective timeout. Dual-ToR: every step "
                         f"completes, none overlapping the fault takes over {k.timeout / 2:g} s "
                         f"(half the timeout) and their median is at most {SLOWDOWN:g}x the median "
                         f"before the fault. Single-ToR: the job fails after the fault began (a "
                         f"collective times out or its connection breaks) or stalls for the fault "
                         f"(a step of at least {0.8 * k.fault:g} s)"),
            measured=measured,
            derived={"dual_slowdown": slowdown},
            headline=(f"dual-ToR {dual['done_all_ranks']}/{steps} steps (x{slowdown} during the "
                      f"fault); single-ToR " + (f"failed {single['failed_after_fault_s']} s into it"
                                                if not single["job_ok"] else
                                                f"stalled {single['fault_longest_step_s']} s")),
            busy=(dual["cpu_busy"], single["cpu_busy"]))

    def plot(self, result, path: Path) -> bool:
        """Rank 0's step times on both fabrics, the fault shaded (as long as dual-ToR's lasted);
        where the single-ToR job failed, marked."""
        dual, single = result.figures["dual_tor"], result.figures["single_tor"]
        marks = {} if single.get("failed_after_fault_s") is None else \
            {"single-ToR job failed": single["failed_after_fault_s"]}
        k = self.knobs_of({"setup": result.setup})
        return plots.fault_timeline(self, result, path, [(0.0, dual.get("fault_s") or 0.0)],
                                    f"{k.kind} down", marks=marks,
                                    levels={"half the collective timeout": k.timeout / 2},
                                    paper={"paper: dual-ToR trains on at its step time":
                                           dual.get("base_step_s") or 0.0})


def invalid(v: dict, k: TrainingKnobs) -> list[str]:
    """Why one variant's run cannot be judged: the fault did not hit mid-training, or the job was
    slow before it (the CPU, not the fabric, set its pace)."""
    if not v["fault_injected"]:
        return [f"the job ended before the fault's step ({v['job']})"]
    if v["base_step_s"] is None or v["base_step_s"] > k.timeout / 4:
        return [f"steps before the fault took {v['base_step_s']} s (over a quarter of the timeout)"]
    return []
