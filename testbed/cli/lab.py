"""`hpn-testbed lab`: the teaching labs (labs/): `list` names them (title and time from each
sheet's heading), `check N answers.toml` grades a student's answers against what that student's
own runs measured, and, without the answer key, leaves the predictions to the instructor
(testbed/labs/)."""
from __future__ import annotations

from testbed.cli.output import console, escape, markup, print_json, table

SHOWN = {"pass": markup("[green]pass[/green]"), "wrong": markup("[red]off[/red]"),
         "blank": markup("[yellow]blank[/yellow]"), "missing": markup("[yellow]no result[/yellow]"),
         "instructor": markup("[cyan]to your instructor[/cyan]")}


def add_parser(sub) -> None:
    lab = sub.add_parser("lab", help="teaching labs (labs/): list them, check a student's answers")
    cmds = lab.add_subparsers(dest="lab_command", required=True)
    ls = cmds.add_parser("list", help="every lab: number, title, time, questions")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_list)
    c = cmds.add_parser("check", help="grade answers.toml against the results your runs wrote; without "
                                      "the answer key (labs/instructor/), the predictions are left to your "
                                      "instructor (exit 0: all graded right; 1: some off, blank or "
                                      "unmeasured; 2: malformed)")
    c.add_argument("number", type=int, metavar="N", help="the lab's number (`lab list`)")
    c.add_argument("answers", metavar="ANSWERS.toml", help="your answers, one `id = value` line each")
    c.add_argument("--results", metavar="DIR",
                   help="where your runs wrote their JSON (default: out/ next to ANSWERS.toml)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_check)


def cmd_list(args) -> int:
    from testbed import labs
    rows = [{"number": lab.number, "name": lab.name, "title": lab.title, "minutes": lab.minutes,
             "questions": len(lab.asks), "predictions": len(lab.predictions),
             "key": lab.key is not None, "sheet": str(lab.sheet)} for lab in labs.all_labs()]
    if args.json:
        print_json(rows)
        return 0
    console().print(table("labs (sheets in labs/NN-name/README.md)",
                          ["lab", "title", "minutes", "questions", "predictions", "sheet"],
                          [(r["number"], r["title"], "-" if r["minutes"] is None else r["minutes"],
                            r["questions"], r["predictions"], r["name"]) for r in rows]))
    return 0


def cmd_check(args) -> int:
    from dataclasses import asdict

    from testbed import labs
    lab = labs.get(args.number)
    report = labs.check(lab, args.answers, args.results)
    if args.json:
        # a wrong answer's tolerance band would give the expected value away: neither is shown
        grades = [{**asdict(g), **({} if g.status == "pass" else {"expected": None, "allowed": None})}
                  for g in report.grades]
        print_json({**asdict(report), "grades": grades, "passed": report.passed, "summary": report.summary})
        return 0 if report.passed else 1
    con = console()
    con.print(table(f"lab {lab.number}: {lab.title} (results from {report.results})",
                    ["question", "", "your answer", "your run"],
                    [(label(lab, g), SHOWN[g.status], shown(g.answer), expected_text(g))
                     for g in report.grades]))
    for g in report.grades:
        if g.advice:
            con.print(f"  [bold]{escape(g.id)}[/bold]: {escape(g.advice)}", soft_wrap=True)
    con.print(report.summary)
    return 0 if report.passed else 1


def label(lab, grade) -> str:
    q = lab.question(grade.id)
    return grade.id + (" (optional)" if grade.optional else "") + (" (reading)" if q and q.reading else "")


def shown(value) -> str:
    if value is None or value == "":
        return "-"
    return f"{value:g}" if isinstance(value, float) else str(value)


def expected_text(g) -> str:
    """What the run measured, once the answer is right (a wrong answer gets a hint, not the key)."""
    return shown(g.expected) if g.status == "pass" else "-"
