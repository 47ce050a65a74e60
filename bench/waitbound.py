"""The validity rule's bound: how much the emulator may wait before a claim's figure moves.

    sudo .venv/bin/python bench/waitbound.py [--scenario disjoint-paths] [--quota 1 0.5 0.25]
        [--neighbour 0 1 2] [--out FILE]

Runs one quick scenario in this process, once per setting: its run's cgroup held to QUOTA of
one CPU (cgroup v1 cpu.cfs_quota_us, v2 cpu.max) while its measured traffic moves, the old
quota written back when it stops; or beside NEIGHBOUR busy loops at normal priority (children
of this bench, ended by their PIDs). For each: the verdict the judge reached before the
validity rule (the claim's own reading), its derived figures, the emulator's worst waiting
(testbed/measure/waitlog.py) and the machine's busy fraction. The bound (testbed/measure/
validity.py WAIT_LIMIT) is set below the waiting at which the claim's figure starts to move.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scenarios  # noqa: E402
from testbed.core import cpuwindow, precedence  # noqa: E402
from testbed.measure import validity  # noqa: E402
from testbed.measure.waitlog import own_cgroups  # noqa: E402

PERIOD_US = 100_000


class Quota:
    """A cpuwindow observer: the run's cgroups held to `share` of one CPU while traffic moves."""

    def __init__(self, share: float):
        self.share, self.changed = share, []
        self.kind = precedence.choose(is_root=True).kind

    def opened(self):
        quota = int(self.share * PERIOD_US)
        knob, value = ("cpu.cfs_quota_us", str(quota)) if self.kind == "cgroup1" else \
            ("cpu.max", f"{quota} {PERIOD_US}")
        for group in own_cgroups():
            path = group / knob
            self.changed.append((path, path.read_text().strip()))
            path.write_text(value)

    def closed(self):
        for path, old in self.changed:
            if path.exists():
                path.write_text(old)


def once(name: str, quota: float | None, neighbours: int) -> dict:
    loops = [subprocess.Popen([sys.executable, "-c", "while True:\n    pass\n"]) for _ in range(neighbours)]
    scenario = scenarios.get(name).configure({}, True)
    try:
        with tempfile.TemporaryDirectory() as out:
            observer = Quota(quota) if quota else None
            if observer:
                with cpuwindow.observe(observer):
                    result = scenario.execute(Path(out))
            else:
                result = scenario.execute(Path(out))
    finally:
        for p in loops:
            p.kill()
            p.wait()
    judged = scenario.judge({**result.figures, "setup": result.setup, "series": result.series})
    return {"quota_cpus": quota, "neighbours": neighbours, "verdict": result.verdict,
            "claim_verdict": judged.claimed, "derived": judged.derived,
            "worst_waiting": result.figures[validity.WAITING]["worst"],
            "runs": result.figures[validity.WAITING]["runs"],
            "cpu_busy_judged": result.figures.get(validity.JUDGED_BUSY)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="disjoint-paths")
    ap.add_argument("--quota", type=float, nargs="*", default=[], help="shares of one CPU")
    ap.add_argument("--neighbour", type=int, nargs="*", default=[0], help="busy loops")
    ap.add_argument("--out", help="append the rows to this JSON-lines file")
    args = ap.parse_args()
    rows = [once(args.scenario, None, n) for n in args.neighbour] + \
        [once(args.scenario, q, 0) for q in args.quota]
    for row in rows:
        line = json.dumps({"scenario": args.scenario, **row})
        print(line, flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
