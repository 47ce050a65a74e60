"""An experiment run: its fabric up, its traffic started, its faults played on schedule, the rate of
every watched host, NIC or link and the queue of every watched switch port sampled, then the mean
of each in each phase (before the faults, during each, after) and the loss during each fault.

An Experiment is a Scenario whose claim is its file's [[expect]] clauses: `execute` writes
NAME.json and NAME.png as a scenario's; the verdict is "reproduced" when every clause holds, "not
reproduced" when one does not, "measured" for a file without clauses (and "invalid" when the CPU,
not the fabric, was busy). Traffic items start at their `start`; RTT and failover-gap probes
(probes.py) run from t = 0 for the timed part of the file.
"""
from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path

from testbed.core.errors import ParamError
from testbed.emulation.build import Emulation, Options
from testbed.emulation.faults import registry as fault_registry
from testbed.emulation.faults.inject import Faults
from testbed.experiments import check, expect, phases
from testbed.experiments.probes import Probes
from testbed.experiments.traffic.load import Load, is_job
from testbed.measure.meters import Sampler, cpu_busy_fraction
from testbed.scenario import plots
from testbed.scenario.base import NOT_REPRODUCED, REPRODUCED, Judgement, Scenario
from testbed.scenario.knobs import Knobs
from testbed.scenario.timeline import Schedule
from testbed.workload import steps

MEASURED = "measured"
JOB_FAILED = "job failed"      # a [[job]] failed: exit status 1 (testbed/cli/attempts.py)


def schedule(faults: Faults, spec) -> Schedule:
    """The file's faults on the timeline engine: each kind injected at its `at` and repaired
    `for` s later, or ending by itself (a flap train holds the schedule until it ends)."""
    out = Schedule(end=spec.planned)
    for f in spec.faults:
        kind = fault_registry.get(f.kind)
        out.fault(f.at, lambda kind=kind, f=f: kind.inject(faults, **f.arguments),
                  None if f.self_timed else f.seconds, label=f.label)
    return out


def shifted(points, sampler: Sampler, t_start: float) -> list[list[float]]:
    """A sampler's [(t, v)] on the experiment's clock: seconds since the traffic started."""
    offset = sampler.t0 - t_start
    return [[round(t + offset, 3), round(v, 3)] for t, v in points]


class Experiment(Scenario, name="experiment", claim="experiment"):
    """One experiment file, run like a scenario."""

    def __init__(self, spec):
        self.spec = spec
        self.name, self.title = spec.name, spec.description or spec.name
        self.paper = f"{self.title} ({spec.path})"      # what it is held against: the file itself
        self.families = (spec.family,)

    def configure(self, settings: dict | None = None, quick: bool = False, preset: str | None = None):
        if settings or preset:
            raise ParamError(f"{self.spec.path}: --set and --preset do not apply to an experiment file; "
                             "put its parameters in [fabric]")
        self.quick, self.knobs, self.settings = quick, Knobs(), dict(self.spec.settings)
        return self

    def run(self, quick: bool) -> dict:
        spec, fab = self.spec, self.spec.fabric
        watched = [check.watched(fab, item) for item in spec.throughput]
        intfs = sorted({i for w in watched for i in w.intfs})
        if any(job.launcher == "mpi" for job in spec.jobs):
            from testbed.workload.mpijob import available
            if available():                  # Open MPI missing: said before anything is built
                raise ParamError(f"{spec.path}: {available()}")
        options = Options(routing=spec.routing, detector=spec.detector)
        with Emulation(fab, options) as emu, Faults(emu) as faults, ExitStack() as stack:
            load, probes = Load(emu, spec, self.jobs_out), Probes(emu, spec)
            timeline = load.schedule(schedule(faults, spec))
            up = stack.enter_context(emu.sampler(intfs, spec.interval, counter="rx_bytes", queues=False))
            down = stack.enter_context(emu.sampler(intfs, spec.interval, queues=False))
            queues = stack.enter_context(emu.sampler(list(spec.queues), spec.interval))
            load.servers()
            probes.start()
            t_start = time.monotonic()
            results, busy = cpu_busy_fraction(lambda: self.play(load, timeline, t_start))
            t_end = time.monotonic() - t_start
            rtt, gaps = probes.read(t_end)
            setup = emu.describe()
        figures = self.figures(watched, (up, down), queues, t_start, t_end, results, busy, setup)
        return self.probe_figures(figures, rtt, gaps)

    def play(self, load: Load, timeline: Schedule, t_start: float) -> list[dict]:
        timeline.play(t_start)
        return load.wait()

    def probe_figures(self, figures: dict, rtt: dict, gaps: dict) -> dict:
        """The probes' figures: each RTT pair's mean in each phase and its series, each gap pair's
        longest silence; then the expect clauses, judged."""
        spans = [(name, a, b) for name, a, b in figures["phases"]]
        figures["rtt"] = {pair: {"phases_ms": {name: level_mean(points, a, b) for name, a, b in spans},
                                 "replies": len(points)} for pair, points in rtt.items()}
        for pair, points in rtt.items():
            figures["series"][f"rtt {pair} (ms)"] = points
        figures["failover_gap"] = gaps
        figures["expect"] = expect.judge(self.spec.expects, figures)
        return figures

    def figures(self, watched, samplers, queues: Sampler, t_start, t_end, results, busy, setup) -> dict:
        spec = self.spec
        spans = phases.phases(spec.faults, spec.first_start + spec.warm, spec.settle, t_end)
        throughput, series = {}, {}
        for w in watched:
            per_direction = {d: shifted(s.rate_series(list(w.intfs)), s, t_start)
                             for d, s in zip(w.directions, samplers)}
            means = {d: phases.phase_means(pts, spans) for d, pts in per_direction.items()}
            main = max(w.directions, key=lambda d: means[d][phases.BEFORE] or 0.0)
            loss = phases.losses(means[main])
            throughput[w.name] = {"what": w.what, "direction": main, "phases_mbps": means[main],
                                  "loss": next(iter(loss.values()), None), "losses": loss,
                                  "other_direction": {d: m for d, m in means.items() if d != main}}
            series[f"{w.name} {main} (Mbit/s)"] = per_direction[main]
        job_steps(results, spans, t_start, series)
        queue_figures = {}
        for port in spec.queues:
            points = shifted([(t, q / 1000) for t, _, q in queues.series[port]], queues, t_start)
            # queue samples are levels, not rates over an interval: a phase's mean is theirs
            queue_figures[port] = {"phases_kb": {name: level_mean(points, a, b) for name, a, b in spans}}
            series[f"queue {port} (KB)"] = points
        return {"throughput": throughput, "queues": queue_figures, "traffic": results,
                "phases": [[name, round(a, 2), round(b, 2)] for name, a, b in spans],
                "traffic_s": round(t_end, 2), "cpu_busy": round(busy, 3), "series": series,
                "setup": {"file": spec.path, "family": spec.family, "settings": spec.settings,
                          "routing": spec.routing, "detector": spec.detector, "emulation": setup,
                          "faults": [[f.label, f.at, f.end, f.windows] for f in spec.faults],
                          "x_label": "time since the traffic started (s)"}}

    def judge(self, figures: dict) -> Judgement:
        parts, warnings = [], []
        for name, item in figures["throughput"].items():
            warnings += phases.rose(name, item.get("losses", {}))
            means = ", ".join(f"{phase} {v if v is not None else '-'}"
                              for phase, v in item["phases_mbps"].items())
            loss = f" (loss {item['loss']:.1%})" if item["loss"] is not None else ""
            parts.append(f"{name} {item['direction']} Mbit/s: {means}{loss}")
        for port, q in figures["queues"].items():
            parts.append(f"queue {port} KB: " + ", ".join(f"{k} {v}" for k, v in q["phases_kb"].items()))
        for pair, r in figures.get("rtt", {}).items():
            parts.append(f"rtt {pair} ms: " + ", ".join(f"{k} {v if v is not None else '-'}"
                                                        for k, v in r["phases_ms"].items()))
        for pair, g in figures.get("failover_gap", {}).items():
            parts.append(f"failover gap {pair}: {g['longest_gap_ms']} ms")
        first = next(iter(figures["throughput"].items()), None)
        headline = (f"{first[0]} loss {first[1]['loss']:.1%}" if first and first[1]["loss"] is not None
                    else f"traffic ran {figures['traffic_s']} s")
        clauses = figures.get("expect", [])
        if clauses:
            held = sum(c["held"] for c in clauses)
            headline = f"{held} of {len(clauses)} expectations held; " + headline
            parts += [f"{c['expect']}: {shown(c['value'])} ({'held' if c['held'] else 'NOT held'})"
                      for c in clauses]
        if warnings:
            headline += "; WARNING: a rate rose during a fault"
        verdict = (REPRODUCED if all(c["held"] for c in clauses) else NOT_REPRODUCED) if clauses else MEASURED
        jobs = [t for t in figures.get("traffic", []) if is_job(t)]
        parts = [f"{t['line']}" + "".join(f"; {row_text(r)}" for r in t["rows"]) + step_text(t)
                 for t in jobs] + parts
        failed = [t for t in jobs if not t["ok"]]
        if failed:      # the job's failure, not the testbed's: exit status 1, the job named
            verdict, headline = JOB_FAILED, "; ".join(t["line"] for t in failed)
        elif jobs:
            headline = "; ".join([t["line"] for t in jobs] + ([headline] if clauses or warnings else []))
        expectation = "; ".join(e.label for e in self.spec.expects) or \
            self.spec.description or "(an experiment without [[expect]]: no claim to judge)"
        return Judgement(verdict, expectation=expectation,
                         measured="; ".join(warnings + parts) or "nothing watched", headline=headline,
                         derived={"warnings": warnings} if warnings else {},
                         busy=[] if failed else [figures["cpu_busy"]])   # a failed job: said, not retried

    def plot(self, result, path: Path) -> bool:
        """The rates (and queues, and a training job's step times) over time, the faults shaded;
        beside them, when a [[job]] printed benchmark rows, each collective's busbw over sizes
        with the model's bound."""
        rates = {k: v for k, v in result.series.items()
                 if not k.startswith(("queue ", "rtt ")) and not is_step_series(k)}
        levels = {k: v for k, v in result.series.items() if k.startswith("queue ")}
        times = {k: v for k, v in result.series.items() if is_step_series(k)}
        rows = [(t["job"], r) for t in result.figures.get("traffic", []) if is_job(t) for r in t["rows"]]
        panels = [(rates, "Mbit/s")] + ([(levels, "queue (KB)")] if levels else []) + \
            ([(times, "step time (s)")] if times else [])
        n = len(panels) + bool(rows)
        fig, axes = plots.figure(self, result, ncols=n, size=(8 + 3.5 * (n - 1), 4.5))
        axes = list(axes) if n > 1 else [axes]
        for ax in axes[1:len(panels)]:      # one time axis over every series: steps line up with rates
            ax.sharex(axes[0])
        for ax, (series, unit) in zip(axes, panels):
            for k, (label, _, _, windows) in enumerate(result.setup["faults"]):
                for w, (start, end) in enumerate(windows):
                    plots.shade(ax, start, end, None if w else label,
                                plots.COLOURS[(k + 3) % len(plots.COLOURS)])
            plots.lines(ax, series)
            ax.set_xlabel(result.setup["x_label"])
            ax.set_ylabel(unit)
            ax.set_ylim(bottom=0)
            ax.legend(fontsize="small", loc="lower left")
        if rows:
            plot_rows(axes[-1], rows)
        plots.save(fig, path)
        return True


def plot_rows(ax, rows: list[tuple[str, dict]]) -> None:
    """busbw over size, one line per job and collective, its bound dashed in the same colour."""
    lines: dict[tuple[str, str], list[dict]] = {}
    for job, row in rows:
        lines.setdefault((job, row["kind"]), []).append(row)
    one_job = len({job for job, _ in lines}) == 1
    for k, ((job, kind), points) in enumerate(lines.items()):
        colour = plots.COLOURS[k % len(plots.COLOURS)]
        sizes = [p["size"] for p in points]
        name = kind if one_job else f"{job}: {kind}"
        ax.plot(sizes, [p["busbw_mbit"] for p in points], marker="o", color=colour, label=name)
        if points[0]["bound_mbit"] is not None:
            ax.plot(sizes, [p["bound_mbit"] for p in points], linestyle="--", color=colour,
                    label=f"{name}: model bound")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("busbw (Mbit/s)")
    top = max(max(r["busbw_mbit"], r["bound_mbit"] or 0.0) for _, r in rows)
    ax.set_ylim(0, top * 1.15 or 1.0)
    ax.legend(fontsize="small")


def job_steps(results: list, spans, t_start: float, series: dict) -> None:
    """Each [[job]] whose rank 0 printed training steps (testbed/workload/steps.py): in its entry,
    the steps' count and median duration in each phase; in `series`, each step's duration at its
    end, both in seconds since the traffic started. A job that printed none is left as it is."""
    for entry in results:
        out = Path(entry["directory"]) / "rank0.out" if is_job(entry) and entry.get("directory") else None
        rows = steps.steps_of(out.read_text(errors="replace")) if out is not None and out.is_file() else []
        if rows:
            entry["steps"] = steps.phase_steps(rows, spans, t_start)
            series[step_series(entry["job"])] = [[round(t - t_start, 3), d] for _, t, d in rows]


def step_series(job: str) -> str:
    return f"job {job} step time (s)"


def is_step_series(name: str) -> bool:
    return name.startswith("job ") and name.endswith(" step time (s)")


def step_text(job: dict) -> str:
    """`; job NAME step s (rank 0, median): before S (N steps), fault 1 (LABEL) S (N steps), ...`:
    the median step in each phase beside how many steps overlap it, as the rates' lines give their
    means; nothing for a job that printed no steps."""
    if "steps" not in job:
        return ""
    counts = job["steps"]["counts"]
    return f"; job {job['job']} step s (rank 0, median): " + ", ".join(
        f"{phase} {v if v is not None else '-'} ({counts[phase]} steps)"
        for phase, v in job["steps"]["phases_s"].items())


def row_text(row: dict) -> str:
    """A benchmark row beside its bound: `allreduce 1048576 B busbw 1.28 Mbit/s (bound 1.333: 96%)`."""
    bound = f" (bound {row['bound_mbit']:g}: {row['of_bound']:.0%})" if row["of_bound"] is not None else ""
    return f"{row['kind']} {row['size']} B busbw {row['busbw_mbit']:g} Mbit/s{bound}"


def shown(value) -> str:
    return "not measured" if value is None else f"{value:g}"


def level_mean(points, start: float, end: float) -> float | None:
    inside = [v for t, v in points if start <= t <= end]
    return round(sum(inside) / len(inside), 2) if inside else None


def load(path: str) -> Experiment:
    """The experiment of a file, checked (ParamError naming file, line and key)."""
    return Experiment(check.load(path))
