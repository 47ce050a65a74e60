"""`hpn-testbed list` and `run`: the scenarios, each reproducing a claim of the papers, and
experiment files (FILE.toml): parameters (--set, --preset), repeats (--repeat N)."""
from __future__ import annotations

import sys

from testbed.cli import attempts
from testbed.cli.output import check_output, console, escape, print_json, styled, table
from testbed.core import progress
from testbed.core.errors import ParamError

OK_VERDICTS = ("reproduced", "measured")     # an experiment file has no claim: it is "measured"
MAX_REPEAT = 100


def add_parser(sub) -> None:
    from testbed.model.families import preset_names
    ls = sub.add_parser("list", help="every scenario with the claim it reproduces")
    ls.add_argument("--params", action="store_true", help="each scenario's parameters and defaults")
    ls.add_argument("--json", action="store_true")
    from testbed.cli.topo import add_custom_arg
    add_custom_arg(ls)
    ls.set_defaults(func=cmd_list)
    r = sub.add_parser("run", add_help=False, epilog=attempts.EPILOG,
                       help="run scenarios or experiment files (needs root; --check does not); with no NAME, "
                            "the tour")
    r.add_argument("-h", "--help", action="store_true",
                   help="show this help; with NAME, that scenario's parameters and defaults")
    r.add_argument("names", nargs="*", metavar="NAME",
                   help="scenarios (see `list`) or experiment files (FILE.toml, see experiments/)")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a scenario knob or fabric parameter (repeatable; `run NAME --help` lists them); "
                        "on the tour, given to the scenarios that take it")
    r.add_argument("--preset", choices=preset_names(),
                   help="a named fabric shape (the family's presets, testbed/model/families); --set "
                        "overrides it")
    r.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="run each scenario N times on fresh bring-ups: median, spread, k of N reproduced")
    r.add_argument("--retries", type=int, default=attempts.DEFAULT_RETRIES, metavar="N",
                   help="run a scenario again, on a fresh bring-up, when its run was invalid because the "
                        f"machine was too busy (at most N more times, default {attempts.DEFAULT_RETRIES}, "
                        "0: never); every attempt is reported, the verdict comes from a valid run")
    r.add_argument("--out", default="out", help="where JSON and PNG reports go (default ./out; made only "
                   "once every check passed; never a symbolic link)")
    r.add_argument("--quick", action="store_true", help="the short version (what the tour runs)")
    r.add_argument("--check", action="store_true",
                   help="only validate experiment files (FILE.toml): no root, no fabric, nothing created "
                        "(a `custom = ...` plug-in does run: its top level registers what it adds); "
                        "one line per valid file, else one error line and exit status 2")
    from testbed.cli.topo import add_custom_arg
    from testbed.cli.up import add_keep_arg, add_servers_arg
    add_custom_arg(r)
    add_servers_arg(r)
    add_keep_arg(r)
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_run, parser=r)


def cmd_list(args) -> int:
    from testbed.scenario import catalog
    classes = catalog.all_scenarios()
    if args.json:
        print_json([{"name": name, "claim": cls.claim, "title": cls.title, "tour": bool(cls.tour),
                     **({"params": params_of(cls())} if args.params else {})}
                    for name, cls in classes.items()])
        return 0
    con = console()
    if args.params:
        for cls in classes.values():
            print_params(con, cls())
        return 0
    con.print(table("scenarios", ["name", "claim", "what it shows", ""],
                    [(name, cls.claim, cls.title, "tour" if cls.tour else "")
                     for name, cls in classes.items()]))
    return 0


def params_of(scenario) -> dict:
    """A scenario's knobs and its fabric's parameters, each with its default (the family's under
    the scenario's own base settings)."""
    import dataclasses

    from testbed.scenario.knobs import fabric_keys
    keys = fabric_keys(scenario.families) - set(scenario.fixed)
    scenario.configure({}, False)
    fabric = {}
    for family in scenario.families:
        params = scenario.fabric(family).params
        fabric.update({f.name: getattr(params, f.name) for f in dataclasses.fields(params) if f.name in keys})
    return {"knobs": scenario.Knobs.describe(), "fixed": scenario.fixed,
            "fabric": {"families": list(scenario.families), "params": fabric}}


def print_params(con, scenario) -> None:
    p = params_of(scenario)
    con.print(f"[bold]{escape(scenario.name)}[/bold] ({escape(scenario.claim)}) parameters, "
              "`--set KEY=VALUE`:")
    con.print(table(None, ["knob", "type", "default", "quick", "what"],
                    [(k["name"], k["type"], shown_value(k["default"]), shown_value(k["quick"]), k["help"])
                     for k in p["knobs"]]))
    families = p["fabric"]["families"]
    if families:
        con.print(f"  fabric ({' and '.join(families)}; see `topo show {families[0]}`): "
                  + escape(" ".join(f"{k}={v}" for k, v in p["fabric"]["params"].items())))
    for key, why in p["fixed"].items():
        con.print(escape(f"  not settable: {key} ({why})"))


def chosen_runs(args) -> list:
    """Every NAME as a configured scenario or experiment, checked before anything runs."""
    from testbed import experiments
    from testbed.cli.up import servers_of
    from testbed.model.params import parse_settings
    from testbed.scenario import catalog, knobs
    settings = parse_settings(args.set)
    if not 1 <= args.repeat <= MAX_REPEAT:
        raise ParamError(f"--repeat {args.repeat}: choose 1..{MAX_REPEAT} (each is a fresh bring-up)")
    if not 0 <= args.retries <= attempts.MAX_RETRIES:
        raise ParamError(f"--retries {args.retries}: choose 0..{attempts.MAX_RETRIES}")
    names = args.names or catalog.tour()
    servers = servers_of(args)
    toml = [n for n in names if n.endswith(".toml")]
    if servers and toml:
        raise ParamError(f"--servers: not supported for experiment files ({', '.join(toml)}); "
                         "run scenarios by name")
    quick = args.quick or not args.names                 # the tour runs short versions
    chosen = [experiments.load(name) if name.endswith(".toml") else catalog.get(name) for name in names]
    # the tour's --set reaches the scenarios that take it; named ones must each take it
    each = knobs.spread(settings, {r.name: r.parameters() for r in chosen}) if not args.names else None
    runs = []
    for run in chosen:
        run = run.configure(each[run.name] if each else settings, quick, args.preset)
        if servers:                      # where its fabrics run (none: this machine)
            run.servers = tuple(servers)
        runs.append(run)
    return runs


def cmd_run(args) -> int:
    from testbed.cli.up import servers_of
    if args.help:
        return show_help(args)
    if args.check:
        return check_files(args)
    check_output("--out", args.out, directory=True)     # before any scenario starts
    runs = chosen_runs(args)                             # bad names and parameters fail here
    check_reports(args.out, runs, args.repeat)
    if servers_of(args):             # each named server known (its state readable) or resolvable
        from testbed.emulation.cluster.parts import Server
        for name in servers_of(args):
            Server.of(name)
    from testbed.cli.up import keep_requested
    keep_requested(args)
    lock = machine_preflight(runs, servers_of(args))   # root, the lock, OVS, names taken
    try:
        return run_all(runs, args)
    finally:
        lock.release()


def check_reports(out: str, runs, repeat: int) -> None:
    """Every report file the runs will write under --out: a name the testbed may write there
    (not a symlink, a directory or a read-only file); nothing is created."""
    from pathlib import Path

    from testbed.core import files
    if not Path(out).is_dir():
        return                 # made by the first run: nothing in it yet
    for run in runs:
        for name in run.outputs(repeat):
            problem = files.target_problem(Path(out), name)
            if problem:
                raise ParamError(f"--out {files.shown(out)}: {problem}")


def machine_preflight(runs=(), servers=()):
    """What every scenario's bring-up would refuse, checked once before anything is printed or
    created (--out included): HPN_MTU and HPN_OVS_SNDBUF, root, the run directory
    (HPN_RUN_DIR), the machine's one-fabric lock (held by `run` until its last scenario is torn
    down), Open vSwitch, a datapath or bond forced by HPN_DATAPATH / HPN_BOND, and, on this
    machine, no name a run's fabric needs already taken (what a killed run left)."""
    import os

    from testbed.emulation.net import system
    from testbed.emulation.run import runstate
    system.check_settings()
    if os.geteuid() != 0:
        raise ParamError("hpn-testbed needs root (network namespaces, Open vSwitch)")
    runstate.check_root()
    lock = runstate.RunLock.take(f"run{os.getpid()}")
    try:
        system.check_machine(system.datapath(), system.bond_backend())
        if not servers:
            from testbed.emulation.site import LocalSite
            fabrics = {(f.family, repr(f.params)): f for run in runs for f in map(run.fabric, run.families)}
            for fabric in fabrics.values():
                LocalSite(fabric).preflight()
    except BaseException:
        lock.release()
        raise
    return lock


def check_files(args) -> int:
    """`run FILE.toml --check`: each file read and checked against its fabric's model, as a run
    would before building anything; one line per file (a bad file's on stderr), or under --json
    one envelope listing them all, a bad file as {"valid": false, "error": ...}. Exit status 2
    if any file is bad, after every file was checked."""
    from testbed.model.params import parse_settings
    if not args.names:
        raise ParamError("--check: name the experiment files to validate (FILE.toml)")
    scenarios = [n for n in args.names if not n.endswith(".toml")]
    if scenarios:
        raise ParamError(f"--check validates experiment files (FILE.toml); {scenarios[0]!r} is not one")
    settings = parse_settings(args.set)
    found = [check_file(name, settings, args) for name in args.names]
    if args.json:
        print_json(found)
    for f in found:
        if not f["valid"]:
            print(f"hpn-testbed: {f['error']}", file=sys.stderr)
        elif not args.json:
            print(f"{f['file']}: valid ({f['family']}, {f['traffic']} traffic, {f['jobs']} job, "
                  f"{f['faults']} fault, {f['expects']} expect)")
    return 0 if all(f["valid"] for f in found) else 2


def check_file(name: str, settings: dict, args) -> dict:
    """One file's entry in `run --check`'s list: what it holds, or the one line that refuses it."""
    from testbed import experiments
    try:
        spec = experiments.load(name).configure(settings, args.quick, args.preset).spec
    except ParamError as e:
        return {"file": name, "valid": False, "error": str(e)}
    return {"file": str(spec.path), "valid": True, "family": spec.family, "traffic": len(spec.traffic),
            "jobs": len(spec.jobs), "faults": len(spec.faults), "expects": len(spec.expects)}


def run_all(runs, args) -> int:
    from pathlib import Path
    out, con = Path(args.out), console()
    if args.repeat > 1:
        return run_repeats(runs, args, out, con)
    results, steps = [], progress.Steps("tour" if not args.names else "scenario", len(runs))
    for scenario in runs:
        if not args.json:
            con.print(f"[bold]{escape(scenario.name)}[/bold] ({scenario.claim}): {escape(scenario.title)}")
        with steps.step(scenario.name) if len(runs) > 1 else progress.phase(scenario.name):
            result = attempted(scenario, args, con, lambda s=scenario: s.execute(out, quick=s.quick))
        results.append(result)
        if not args.json:
            print_result(con, result)
    if args.json:
        from dataclasses import asdict
        print_json([asdict(r) for r in results])
    else:
        if len(results) > 1:
            con.print(summary_table(results))
        con.print(f"[bold]{escape(attempts.closing(results))}[/bold]")
    return attempts.exit_status(results)


def attempted(scenario, args, con, execute):
    """`execute()` again while its run is invalid for want of CPU, at most --retries more times,
    each attempt said (on stdout unless --json) and waiting first for a quieter machine."""
    import time

    def said(k, result):
        if not args.json:
            con.print(f"  attempt {k}: {shown(result.verdict)} ({escape(result.headline)}); "
                      f"running {escape(scenario.name)} again on a fresh bring-up")

    def calm():
        with progress.phase("waiting for a quieter machine"):
            attempts.wait_for_quiet(time.sleep, time.monotonic)
    return attempts.until_valid(execute, args.retries, said, calm)


def summary_table(results):
    """The tour's summary: one short row per scenario (its headline), readable at 80 columns."""
    return table("hpn-testbed tour (full reports above and in --out)",
                 ["claim", "scenario", "verdict", "measured"],
                 [(r.claim, escape(r.scenario), shown(r.verdict), escape(r.headline or short(r.measured)))
                  for r in results])


def print_result(con, result) -> None:
    con.print(f"  {escape(result.source)}\n  expected here: {escape(result.expectation)}\n"
              f"  measured: {escape(result.measured)}\n  verdict: {shown(result.verdict)}"
              + (f" ({escape(result.headline)})" if result.headline else ""))
    files = ", ".join(result.files.values())
    con.print(f"  files: {escape(files)}", soft_wrap=True)


def run_repeats(runs, args, out, con) -> int:
    from testbed.scenario.repeat import repeat
    summaries = []
    for scenario in runs:
        if not args.json:
            con.print(f"[bold]{escape(scenario.name)}[/bold] ({scenario.claim}) x {args.repeat}: "
                      f"{escape(scenario.title)}")

        def each(k, result):
            if not args.json:
                con.print(f"  run {k} of {args.repeat}: {shown(result.verdict)} ({escape(result.headline)})")
        summary, results = repeat(scenario, args.repeat, out, each,
                                  progress.Steps(f"{scenario.name} run", args.repeat),
                                  lambda execute, s=scenario: attempted(s, args, con, execute))
        summaries.append((summary, results))
        if not args.json:
            print_spread(con, summary)
    if args.json:
        from dataclasses import asdict
        print_json([{**s, "results": [asdict(r) for r in rs]} for s, rs in summaries])
    every = [r for _, rs in summaries for r in rs]
    if not args.json:
        con.print(f"[bold]{escape(attempts.closing(every))}[/bold]")
    return attempts.exit_status(every)


def print_spread(con, summary: dict) -> None:
    varying = {k: v for k, v in summary["figures"].items() if v["spread"]}
    con.print(f"  [bold]{escape(summary['scenario'])}: {summary['summary']}[/bold] "
              f"({', '.join(summary['verdicts'])})")
    con.print(table(None, ["figure", "median", "lowest", "highest"],
                    [(k, f"{v['median']:g}", f"{v['min']:g}", f"{v['max']:g}") for k, v in varying.items()]))
    constant = len(summary["figures"]) - len(varying)
    con.print(f"  ({constant} figures the same in every run not shown; all in {escape(summary['file'])})")


def show_help(args) -> int:
    from testbed.scenario import catalog
    args.parser.print_help()
    con = console()
    for name in args.names:
        if not name.endswith(".toml"):
            print_params(con, catalog.get(name))
    return 0


def shown_value(value) -> str:
    return ",".join(str(v) for v in value) if isinstance(value, list) else str(value)


def shown(verdict: str) -> str:
    return verdict if verdict == "measured" else styled(verdict)


def short(text: str, limit: int = 60) -> str:
    """The first clause of a report's text, for the one-table summary."""
    head = text.split("; ")[0]
    return head if len(head) <= limit else head[:limit - 1].rstrip() + "…"
