"""Headroom: do the scenarios' verdicts survive a machine that is not idle?

    sudo .venv/bin/python bench/headroom.py [NAME ...] [--load 0.5] [--out DIR] [--full]
        [--only as-is|loaded] [--mtu 1500 9000] [--repeat N]

Runs the chosen scenarios (default: the tour, in quick mode like `hpn-testbed run`) twice: on the
machine as it is, then beside a background load this bench starts and stops itself: a busy loop
duty-cycled to `--load` of one core (0.5: half a core, a quarter of a 2-core machine), its own
child process, ended by its PID. Each pass is one `hpn-testbed run --json`; for each scenario it
reports the verdict and the CPU busy fraction in the runs the verdict rests on: the figure its
validity check read (`cpu_busy_judged`, the judge's Judgement.cpu_busy; for a result without
it, the highest `cpu_busy` figure recorded: testbed/measure/validity.py `busiest`). The checks
are not loosened: a run the CPU bounded stays `invalid`.
`--mtu A B ...` runs both passes at each MTU in turn (HPN_MTU in each run's environment), so that
MTUs are compared in one run of the bench on the same machine; without it, the default MTU.
`--repeat N` runs each scenario N times in each pass (`run --repeat N`, a fresh bring-up each):
a scenario counts as reproduced when all N did, its CPU busy is the highest of its N runs.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from testbed.cli.runs import MAX_REPEAT
from testbed.emulation.net.system import MTU_RANGE
from testbed.measure.validity import WAIT_LIMIT, busiest

PERIOD = 0.1     # s: the busy loop's cycle, spin for load x PERIOD, then sleep

LOOP = """
import sys, time
load, period = float(sys.argv[1]), float(sys.argv[2])
while True:
    t0 = time.monotonic()
    while time.monotonic() - t0 < load * period:
        pass
    time.sleep(max(0.0, period - (time.monotonic() - t0)))
"""


class BusyLoop:
    """A child process that keeps `load` of one core busy until the block ends (then killed by PID)."""

    def __init__(self, load: float):
        self.load, self.proc = load, None

    def __enter__(self) -> BusyLoop:
        if self.load > 0:
            self.proc = subprocess.Popen([sys.executable, "-c", LOOP, str(self.load), str(PERIOD)])
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


def run_pass(names: list[str], out: Path, full: bool, mtu: int | None = None,
             repeat: int = 1) -> tuple[list[dict], float]:
    """One `hpn-testbed run --json` (at `mtu` if given: HPN_MTU; each scenario `repeat` times):
    (its results, seconds it took)."""
    argv = [sys.executable, "-m", "testbed", "run", *names, "--json", "--out", str(out)]
    if repeat > 1:
        argv += ["--repeat", str(repeat)]
    if names and not full:
        argv.append("--quick")          # as the tour runs: the short versions
    env = dict(os.environ, **({"HPN_MTU": str(mtu)} if mtu else {}))
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    took = time.monotonic() - t0
    try:
        return json.loads(proc.stdout)["result"], took     # the --json envelope's results
    except (json.JSONDecodeError, KeyError, TypeError):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise SystemExit(f"headroom: `{' '.join(argv[1:])}` gave no results (exit "
                         f"{proc.returncode}): {' | '.join(tail)}") from None


def rows(results: list[dict]) -> dict[str, tuple[str, float | None, bool]]:
    """scenario -> (verdict, highest CPU busy fraction its runs recorded, reproduced). A repeated
    scenario (`run --repeat`: a summary with its runs' results) reads `k of N reproduced`."""
    got = {}
    for r in results:
        runs = r.get("results", [r])
        busy = [b for b in (busiest(x.get("figures", {})) for x in runs) if b is not None]
        ok = sum(x["verdict"] == "reproduced" for x in runs)
        shown = runs[0]["verdict"] if len(runs) == 1 else f"{ok} of {len(runs)} reproduced"
        got[r["scenario"]] = (shown, max(busy, default=None), ok == len(runs))
    return got


def pass_name(kind: str, mtu: int | None) -> str:
    """A pass's label: `as-is` or `loaded`, with `@MTU` when the bench was given MTUs."""
    return f"{kind}@{mtu}" if mtu else kind


def shown_busy(busy: float | None) -> str:
    return "-" if busy is None else f"{busy:.0%}"


def report(passes: dict[str, dict], load: float) -> None:
    names = list(next(iter(passes.values())))
    # two passes fit 80 columns: 22 + 2 x (19 + 6); the header names each pass over its verdicts
    print(f"{'scenario':<22}" + "".join(f"{p:>19}{'CPU':>6}" for p in passes))
    for n in names:
        print(f"{n:<22}" + "".join(f"{passes[p][n][0]:>19}{shown_busy(passes[p][n][1]):>6}"
                                   for p in passes if n in passes[p]))
    for p, got in passes.items():
        ok = sum(all_ok for _, _, all_ok in got.values())
        busy = [b for _, b, _ in got.values() if b is not None]
        print(f"{p}: {ok} of {len(got)} reproduced; busiest {shown_busy(max(busy, default=None))}"
              f" (reported; validity: the emulator waits at most {WAIT_LIMIT:.0%}; idle target 60%)")
    print(f"loaded = beside a busy loop at {load:.0%} of one core (its own process, ended by PID)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="scenarios (default: the tour)")
    ap.add_argument("--load", type=float, default=0.5, help="fraction of one core the loop keeps busy")
    ap.add_argument("--out", default="out/headroom")
    ap.add_argument("--full", action="store_true", help="named scenarios at full length, not --quick")
    ap.add_argument("--only", choices=("as-is", "loaded"), help="one pass only")
    ap.add_argument("--mtu", type=int, nargs="+", metavar="BYTES",
                    help="run the passes at each of these MTUs in turn (default: HPN_MTU or the default)")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="each scenario N times per pass (run --repeat N); reproduced = all N did")
    args = ap.parse_args()
    if not 1 <= args.repeat <= MAX_REPEAT:
        print(f"headroom: --repeat takes 1..{MAX_REPEAT} runs per scenario", file=sys.stderr)
        sys.exit(2)
    if not 0 < args.load <= 1:
        print("headroom: --load is a fraction of one core, in (0, 1]", file=sys.stderr)
        sys.exit(2)
    if any(not MTU_RANGE[0] <= m <= MTU_RANGE[1] for m in args.mtu or ()):
        print(f"headroom: --mtu takes bytes, {MTU_RANGE[0]}..{MTU_RANGE[1]}", file=sys.stderr)
        sys.exit(2)
    passes: dict[str, dict] = {}
    for mtu in args.mtu or [None]:
        for kind, load in (("as-is", 0.0), ("loaded", args.load)):
            if args.only and args.only != kind:
                continue
            name = pass_name(kind, mtu)
            with BusyLoop(load):
                results, took = run_pass(args.names, Path(args.out) / name, args.full, mtu,
                                         args.repeat)
            passes[name] = rows(results)
            print(f"{name} pass: {len(results)} scenarios in {took:.0f} s", flush=True)
    report(passes, args.load)


if __name__ == "__main__":
    main()
