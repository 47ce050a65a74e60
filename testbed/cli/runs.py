"""`hpn-testbed list` and `run`: the scenarios, each reproducing a claim of the papers."""
from __future__ import annotations

from testbed.cli.output import check_output, console, print_json, styled, table
from testbed.core.errors import ParamError


def add_parser(sub) -> None:
    ls = sub.add_parser("list", help="every scenario with the claim it reproduces")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_list)
    r = sub.add_parser("run", help="run scenarios (needs root); with no NAME, the tour of headline claims")
    r.add_argument("names", nargs="*", metavar="NAME", help="scenarios to run (see `list`)")
    r.add_argument("--out", default="out", help="where JSON and PNG reports go (default ./out)")
    r.add_argument("--quick", action="store_true", help="the short version (what the tour runs)")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_run)


def cmd_list(args) -> int:
    import scenarios
    rows = [(name, cls.claim, cls.title, "tour" if name in scenarios.TOUR else "")
            for name, cls in scenarios.all_scenarios().items()]
    if args.json:
        print_json([dict(zip(("name", "claim", "title", "tour"), r)) for r in rows])
    else:
        console().print(table("scenarios", ["name", "claim", "what it shows", ""], rows))
    return 0


def cmd_run(args) -> int:
    from pathlib import Path

    import scenarios
    check_output("--out", args.out, directory=True)     # before any scenario starts
    names = args.names or scenarios.TOUR
    if not names:
        raise ParamError("no scenarios yet")
    chosen = [scenarios.get(n) for n in names]          # unknown names fail before anything runs
    quick = args.quick or not args.names                 # the tour runs short versions
    results = []
    con = console()
    for scenario in chosen:
        if not args.json:
            con.print(f"[bold]{scenario.name}[/bold] ({scenario.claim}): {scenario.title}")
        result = scenario.execute(Path(args.out), quick=quick)
        results.append(result)
        if not args.json:
            con.print(f"  paper: {result.paper}\n  expected here: {result.expectation}\n"
                      f"  measured: {result.measured}\n  verdict: {styled(result.verdict)}")
    if args.json:
        from dataclasses import asdict
        print_json([asdict(r) for r in results])
    elif len(results) > 1:
        con.print(table("hpn-testbed tour (full reports above and in --out)",
                        ["claim", "scenario", "paper", "scaled expectation", "measured", "verdict"],
                        [(r.claim, r.scenario, short(r.paper), short(r.expectation), short(r.measured),
                          styled(r.verdict)) for r in results]))
    return 0 if all(r.verdict == "reproduced" for r in results) else 1


def short(text: str, limit: int = 60) -> str:
    """The first clause of a report's text, for the one-table summary."""
    head = text.split("; ")[0]
    return head if len(head) <= limit else head[:limit - 1].rstrip() + "…"
