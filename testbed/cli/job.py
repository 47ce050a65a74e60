"""`hpn-testbed job FILE.toml`: your own distributed program (torch.distributed, anything that
reads torchrun's environment, MPI under mpirun with `launcher = "mpi"`) run on a fabric, one
process per rank in its host (docs/jobs.md). The file names the fabric and its [[job]] tables
(testbed/experiments/jobfile.py).

Exit status: 0 when every job's every rank exits 0; 1 when a job fails (a rank's non-zero exit,
a crash, the timeout: the line names the rank and its last line of output); 2 for a bad file
(`--check` reads and places it without root and builds nothing).
"""
from __future__ import annotations

from pathlib import Path

from testbed.cli.output import check_output, console, escape, print_json, table


def add_parser(sub) -> None:
    p = sub.add_parser("job", help="run your own distributed program's ranks on a fabric (needs root)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("file", metavar="FILE.toml", help="a job file: [fabric] and [[job]] tables")
    p.add_argument("--check", action="store_true",
                   help="read the file and place every job's ranks on the fabric model; build nothing")
    p.add_argument("--out", default="out/jobs",
                   help="where each job's logs go: OUT/NAME/rankN.out, rankN.err, job.json "
                        "(default ./out/jobs)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_job)


def cmd_job(args) -> int:
    from testbed.experiments import jobfile
    from testbed.workload.jobs import place
    spec = jobfile.load(args.file)
    if args.check:
        placed = {job.name: place(job, spec.fabric) for job in spec.jobs}
        if args.json:
            print_json({"file": args.file, "jobs": {name: [_placed(r) for r in ranks]
                                                    for name, ranks in placed.items()}})
            return 0
        for name, ranks in placed.items():
            console().print(table(f"job {escape(name)}: {len(ranks)} ranks",
                                  ["rank", "host", "nic", "addr", "command"],
                                  [(r.rank, r.host, r.nic, r.addr, escape(" ".join(r.argv)))
                                   for r in ranks]))
        return 0
    check_output("--out", args.out, directory=True)
    if any(job.launcher == "mpi" for job in spec.jobs):
        from testbed.core.errors import ParamError
        from testbed.workload.mpijob import available
        if available():
            raise ParamError(f"{args.file}: {available()}")
    return _run(spec, args)


def _placed(rank) -> dict:
    return {"rank": rank.rank, "host": rank.host, "nic": rank.nic, "addr": rank.addr,
            "ifname": rank.ifname, "argv": list(rank.argv)}


def _run(spec, args) -> int:
    from testbed.core import progress
    from testbed.emulation.build import Options
    from testbed.emulation.factory import make_emulation
    from testbed.experiments.traffic.load import job_figures
    from testbed.workload.jobrun import run_job
    results = []
    with make_emulation(spec.fabric, Options()) as emu:
        for job in spec.jobs:
            with progress.phase(f"job {job.name}"):
                results.append(run_job(emu, job, out=Path(args.out) / job.name, cwd=spec.directory))
            if not args.json:
                colour = "green" if results[-1].ok else "red"
                console().print(f"[{colour}]{escape(results[-1].line())}[/{colour}]")
                print_rows(job_figures(spec.fabric, job.name, results[-1])["rows"])
    if args.json:
        print_json({"file": args.file, "jobs": [r.as_dict() for r in results]})
    return 0 if all(r.ok for r in results) else 1


def print_rows(rows: list[dict]) -> None:
    """The benchmark rows rank 0 printed, each beside the fluid model's bound for the placement
    (testbed/workload/benchrows.py); nothing when it printed none."""
    if rows:
        console().print(table(None, ["collective", "size (B)", "time (us)", "algbw (Mbit/s)",
                                     "busbw (Mbit/s)", "bound (Mbit/s)", "of bound"],
                              [(r["kind"], r["size"], f"{r['time_us']:.0f}", f"{r['algbw_mbit']:g}",
                                f"{r['busbw_mbit']:g}", f"{r['bound_mbit']:g}" if r["bound_mbit"] else "-",
                                f"{r['of_bound']:.0%}" if r["of_bound"] is not None else "-")
                               for r in rows]))
