"""The table `make tour-lane` ends with: per scenario of a lane run (OUT/NAME.json, NAME.time),
its verdict, headline, the datapath and bond its bring-ups took and its run time, and, given
--against DIR, the same scenario's verdict and headline from a userspace-datapath run (DIR/NAME.json),
so that what the kernel paths change can be read off one table. Markdown, so it can go into
bench/results/journal.md as it is. Exit status 0 only if every scenario reproduced."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def paths_taken(setup) -> str:
    """The distinct datapaths and bonds recorded anywhere in a run's setup (each bring-up
    records its own), e.g. 'system/bonding'."""
    found = {"datapath": set(), "bond": set()}

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in found and isinstance(value, str):
                    found[key].add(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(setup)
    return "/".join(",".join(sorted(found[k])) for k in ("datapath", "bond") if found[k]) or "?"


def load(directory: Path, name: str) -> dict | None:
    path = directory / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def row(out: Path, against: Path | None, name: str) -> tuple[list[str], bool]:
    """The table row of scenario `name` and whether it reproduced."""
    lane = load(out, name)
    time_file = out / f"{name}.time"
    seconds = f"{time_file.read_text().strip()} s" if time_file.is_file() else "?"
    if lane is None:
        log = out / f"{name}.log"
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.is_file() else []
        cells = [name, "?", "no result", cell(tail[0] if tail else "did not run"), "?", seconds]
        ok = False
    else:
        settings = lane.get("setup", {}).get("settings") or {}
        shown = ", ".join(f"{k}={v}" for k, v in settings.items())
        cells = [name, lane["claim"], lane["verdict"], cell(lane.get("headline", "")),
                 paths_taken(lane.get("setup", {})) + (f" ({shown})" if shown else ""), seconds]
        ok = lane["verdict"] == "reproduced"
    if against is not None:
        user = load(against, name)
        cells += ([user["verdict"], cell(user.get("headline", "")), paths_taken(user.get("setup", {}))]
                  if user else ["-", "-", "-"])
    return cells, ok


def cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("names", nargs="+")
    ap.add_argument("--against", type=Path, help="a userspace run's NAME.json files")
    args = ap.parse_args(argv)
    head = ["scenario", "claim", "verdict (lane)", "measured (lane)", "paths (settings)", "time"]
    if args.against:
        head += ["verdict (userspace)", "measured (userspace)", "paths"]
    rows = [row(args.out, args.against, name) for name in args.names]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for cells, _ in rows:
        print("| " + " | ".join(cells) + " |")
    reproduced = sum(ok for _, ok in rows)
    print(f"\n{reproduced} of {len(rows)} reproduced on the lane")
    return 0 if reproduced == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
