"""Headroom: do the scenarios' verdicts survive a machine that is not idle?

    sudo .venv/bin/python bench/headroom.py [NAME ...] [--neighbour CORES ...] [--out DIR]
        [--full] [--mtu 1500 9000] [--repeat N] [--retries N]

Runs the chosen scenarios (default: the tour, in quick mode like `hpn-testbed run`) once per
neighbour load: a "neighbour" is other work on the machine at normal priority, busy loops this
bench starts and ends itself (its own child processes, ended by PID), one per core it takes,
the last one duty-cycled for a fraction (`--neighbour 0 0.5 1 all`: none, half a core, a full
core, every core; the default is 0, 1 and all). Each pass is one `hpn-testbed run --json` (its
own retries of invalid runs included, `--retries`); for each scenario it reports the verdict,
how many attempts it took, the machine's CPU busy fraction in the runs the verdict rests on (the
judge's `cpu_busy_judged`: testbed/measure/validity.py `busiest`) and the emulator's own waiting
for a CPU over the same runs, with the process that waited most (validity.py `worst_waiting`). The
checks are not loosened: a run the CPU bounded stays `invalid`.
`--mtu A B ...` runs the passes at each MTU in turn (HPN_MTU in each run's environment); without
it, the default MTU. `--repeat N` runs each scenario N times in each pass (`run --repeat N`, a
fresh bring-up each): a scenario counts as reproduced when all N did. The table is printed and
written as headroom.json in --out.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from testbed.cli.attempts import MAX_RETRIES
from testbed.cli.runs import MAX_REPEAT
from testbed.core import sh
from testbed.emulation.net.system import MTU_RANGE
from testbed.measure.validity import busiest, worst_waiting

PERIOD = 0.1     # s: a busy loop's cycle, spin for load x PERIOD, then sleep
DEFAULT_NEIGHBOURS = ("0", "1", "all")

LOOP = """
import sys, time
load, period = float(sys.argv[1]), float(sys.argv[2])
while True:
    t0 = time.monotonic()
    while time.monotonic() - t0 < load * period:
        pass
    time.sleep(max(0.0, period - (time.monotonic() - t0)))
"""


def duties(cores: float) -> list[float]:
    """The busy loops that take `cores` of the machine: one per whole core, the rest in one
    duty-cycled loop (1.5 -> [1.0, 0.5]; 0 -> none)."""
    return [min(1.0, cores - k) for k in range(math.ceil(cores - 1e-9))]


class Neighbour:
    """Busy loops at normal priority that keep `cores` of the machine busy until the block ends
    (each its own child, killed by its PID)."""

    def __init__(self, cores: float):
        self.cores, self.procs = cores, []

    def __enter__(self) -> Neighbour:
        self.procs = [subprocess.Popen([sys.executable, "-c", LOOP, str(d), str(PERIOD)])
                      for d in duties(self.cores)]
        return self

    def __exit__(self, *exc) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()


def parse_neighbour(text: str, ncpu: int) -> float:
    """`all` (every core) or a number of cores in [0, ncpu]; ValueError otherwise."""
    cores = float(ncpu) if text == "all" else float(text)
    if not 0 <= cores <= ncpu or math.isnan(cores):
        raise ValueError(text)
    return cores


def pass_name(cores: float, ncpu: int, mtu: int | None = None) -> str:
    """A pass's label: `idle`, `0.5 core`, `1 core`, `2 cores (all)`, with `@MTU` when asked."""
    name = "idle" if cores == 0 else f"{cores:g} core{'s' if cores > 1 else ''}"
    if cores == ncpu and cores > 0:
        name += " (all)"
    return f"{name}@{mtu}" if mtu else name


def run_pass(names: list[str], out: Path, full: bool, mtu: int | None = None,
             repeat: int = 1, retries: int | None = None) -> tuple[list[dict], float]:
    """One `hpn-testbed run --json` (at `mtu` if given: HPN_MTU; each scenario `repeat` times):
    (its results, seconds it took)."""
    argv = ["run", *names, "--json", "--out", str(out)]
    if repeat > 1:
        argv += ["--repeat", str(repeat)]
    if retries is not None:
        argv += ["--retries", str(retries)]
    if names and not full:
        argv.append("--quick")          # as the tour runs: the short versions
    env = dict(os.environ, **({"HPN_MTU": str(mtu)} if mtu else {}))
    t0 = time.monotonic()
    proc = sh.testbed_run(argv, env=env)
    took = time.monotonic() - t0
    try:
        return json.loads(proc.stdout)["result"], took     # the --json envelope's results
    except (json.JSONDecodeError, KeyError, TypeError):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise SystemExit(f"headroom: `{' '.join(argv)}` gave no results (exit "
                         f"{proc.returncode}): {' | '.join(tail)}") from None


def rows(results: list[dict]) -> dict[str, dict]:
    """scenario -> its row: verdict (`k of N reproduced` for a repeated one), reproduced (all
    runs did), attempts (the most any run took), busy (highest judged CPU busy fraction),
    wait (the most any run's process waited, as (process, fraction)), or None where not read."""
    got = {}
    for r in results:
        runs = r.get("results", [r])
        figures = [x.get("figures", {}) for x in runs]
        busy = [b for b in map(busiest, figures) if b is not None]
        waits = [w for w in map(worst_waiting, figures) if w is not None]
        ok = sum(x["verdict"] == "reproduced" for x in runs)
        got[r["scenario"]] = {
            "verdict": runs[0]["verdict"] if len(runs) == 1 else f"{ok} of {len(runs)} reproduced",
            "reproduced": ok == len(runs),
            "attempts": max((len(f.get("attempts", [])) or 1 for f in figures), default=1),
            "busy": max(busy, default=None),
            "wait": max(waits, key=lambda w: w[1], default=None)}
    return got


def shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def shown_wait(wait) -> str:
    return "-" if wait is None else f"{wait[1]:.0%} {wait[0]}"


def table(passes: dict[str, dict]) -> Table:
    """One row per scenario; per pass its verdict, attempts, CPU busy and worst waiting."""
    t = Table("scenario", title="verdicts beside a neighbour (busy = the machine's CPU; "
                                "waited = the emulator's worst process; the rule reads the waiting)")
    for p in passes:
        t.add_column(p)
    for n in dict.fromkeys(n for got in passes.values() for n in got):
        cells = []
        for got in passes.values():
            row = got.get(n)
            cells.append("-" if row is None else
                         f"{row['verdict']}" + (f" ({row['attempts']} tries)" if row["attempts"] > 1 else "")
                         + f"\nbusy {shown(row['busy'])}, waited {shown_wait(row['wait'])}")
        t.add_row(n, *cells)
    return t


def summary(name: str, got: dict) -> str:
    ok = sum(row["reproduced"] for row in got.values())
    retried = sum(row["attempts"] > 1 for row in got.values())
    busy = [row["busy"] for row in got.values() if row["busy"] is not None]
    return (f"{name}: {ok} of {len(got)} reproduced, {retried} needed a retry; busiest judged "
            f"run {shown(max(busy, default=None))}")


def main() -> None:
    ncpu = os.cpu_count() or 1
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="scenarios (default: the tour)")
    ap.add_argument("--neighbour", nargs="+", default=list(DEFAULT_NEIGHBOURS), metavar="CORES",
                    help=f"the neighbour loads, one pass each: cores kept busy (0..{ncpu}) or "
                         f"'all' (default: {' '.join(DEFAULT_NEIGHBOURS)})")
    ap.add_argument("--out", default="out/headroom")
    ap.add_argument("--full", action="store_true", help="named scenarios at full length, not --quick")
    ap.add_argument("--mtu", type=int, nargs="+", metavar="BYTES",
                    help="run the passes at each of these MTUs in turn (default: HPN_MTU or the default)")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="each scenario N times per pass (run --repeat N); reproduced = all N did")
    ap.add_argument("--retries", type=int, metavar="N",
                    help="run's retries of an invalid run (default: run's own)")
    args = ap.parse_args()
    try:
        loads = [parse_neighbour(text, ncpu) for text in args.neighbour]
    except ValueError:
        ap.exit(2, f"headroom: --neighbour takes cores, 0..{ncpu}, or 'all'\n")
    if not 1 <= args.repeat <= MAX_REPEAT:
        ap.exit(2, f"headroom: --repeat takes 1..{MAX_REPEAT} runs per scenario\n")
    if args.retries is not None and not 0 <= args.retries <= MAX_RETRIES:
        ap.exit(2, f"headroom: --retries takes 0..{MAX_RETRIES}\n")
    if any(not MTU_RANGE[0] <= m <= MTU_RANGE[1] for m in args.mtu or ()):
        ap.exit(2, f"headroom: --mtu takes bytes, {MTU_RANGE[0]}..{MTU_RANGE[1]}\n")
    passes: dict[str, dict] = {}
    for mtu in args.mtu or [None]:
        for cores in loads:
            name = pass_name(cores, ncpu, mtu)
            if name in passes:         # the same load again (`--neighbour 1 1 1`): a pass of its own
                name += f" #{sum(n == name or n.startswith(name + ' #') for n in passes) + 1}"
            with Neighbour(cores):
                results, took = run_pass(args.names, Path(args.out) / name.replace(" ", "-"),
                                         args.full, mtu, args.repeat, args.retries)
            passes[name] = rows(results)
            print(f"{name} pass: {len(results)} scenarios in {took:.0f} s; {summary(name, passes[name])}",
                  flush=True)
    Console().print(table(passes))
    for name, got in passes.items():
        print(summary(name, got))
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "headroom.json").write_text(json.dumps(passes, indent=1) + "\n")


if __name__ == "__main__":
    main()
