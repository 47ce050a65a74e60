"""`hpn-testbed ps`: the fabrics running on this machine (and runs that left something behind),
read from their run state (testbed/emulation/run/runstate.py), so `trace --fabric RUN` and `capture`
need no id that only `up` printed."""
from __future__ import annotations

from testbed.cli.output import console, print_json, table


def add_parser(sub) -> None:
    p = sub.add_parser("ps", help="running fabrics: run id, family, size, age, PID, datapath (exit 1: "
                                  "a run's state cannot be read; 2: it is root's and we are not root)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_ps)


def cmd_ps(args) -> int:
    from testbed.emulation.run import runlist
    rows = runlist.listing()
    status = 1 if any(r.get("error") for r in rows) else 0
    if args.json:
        print_json({"runs": rows})
        return status
    if not rows:
        print("no fabric is running")
        return 0
    console().print(table("fabrics", ["run", "family", "size", "age", "pid", "datapath", "state"],
                          [(r["run"], r["family"] or "-", size(r), age(r["age_s"]), r["pid"] or "-",
                            r["datapath"] or "-", state(r)) for r in rows]))
    return status


def state(row: dict) -> str:
    if row.get("error"):
        return f"state unreadable: {row['error']}"
    return "running" if row["live"] else "left over (`hpn-testbed clean`)"


def size(row: dict) -> str:
    if row["switches"] is None:
        return "-"
    return f"{row['switches']} sw, {row['hosts']} hosts, {row['nics']} NICs" + \
        (f" on {len(row['servers'])} servers" if row["servers"] else "")


def age(seconds: float | None) -> str:
    """1h02m, 3m05s, 12s."""
    if seconds is None:
        return "-"
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
