"""nccl-tests on the fabric: each row of a collective benchmark job against the fluid model's bound.

    sudo .venv/bin/python bench/collectives.py [FILE.toml ...] [--out DIR] [--target 0.85]

Runs each experiment file with a [[job]] that prints benchmark rows (default
examples/jobs/collectives_torch.toml: gloo's all-reduce, all-gather, reduce-scatter, all-to-all
and sendrecv across the pods of the default HPN fabric) through `hpn-testbed run`, then prints
every row: collective, size, busbw, the model's bound for the placement
(testbed/workload/benchrows.py) and their ratio. Its last line per file is issue 38's figure: the
all-reduce busbw of the largest size over its bound (met at `--target` or more).
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from testbed.core import sh
from testbed.experiments.traffic.load import is_job

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "examples" / "jobs" / "collectives_torch.toml"


def run(path: Path, out: Path) -> list[dict]:
    """The run's job entries (testbed/experiments/traffic/load.py job_figures)."""
    proc = sh.testbed_run(["run", str(path), "--json", "--retries", "0", "--out", str(out)], cwd=ROOT)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{path}: hpn-testbed run exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    (result,) = json.loads(proc.stdout)["result"]     # the envelope: {"ok": ..., "result": [...]}
    return [t for t in result["figures"]["traffic"] if is_job(t)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="*", type=Path, default=[DEFAULT], metavar="FILE.toml")
    p.add_argument("--out", type=Path, help="where the reports go (default: a temporary directory)")
    p.add_argument("--target", type=float, default=0.85, help="all-reduce busbw over its bound, at least")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.files:
            jobs = run(path, args.out or Path(tmp))
            print(f"{path}:")
            print(f"  {'job':<14} {'collective':<14} {'size (B)':>10} {'busbw (Mbit/s)':>15} "
                  f"{'bound (Mbit/s)':>15} {'ratio':>6}")
            for job in jobs:
                if not job["ok"]:
                    print(f"  {job['line']}")
                for r in job["rows"]:
                    ratio = f"{r['of_bound']:.2f}" if r["of_bound"] is not None else "-"
                    print(f"  {job['job']:<14} {r['kind']:<14} {r['size']:>10} {r['busbw_mbit']:>15.3f} "
                          f"{r['bound_mbit'] or 0:>15.3f} {ratio:>6}")
            largest = [max((r for r in job["rows"] if r["kind"] == "allreduce" and r["of_bound"]),
                           key=lambda r: r["size"], default=None) for job in jobs]
            for job, r in zip(jobs, largest):
                if r is not None:
                    met = "met" if r["of_bound"] >= args.target else "NOT met"
                    print(f"  {job['job']}: all-reduce busbw at {r['size']} B is {r['of_bound']:.2f} of the "
                          f"model's bound ({met}: at least {args.target:g})")


if __name__ == "__main__":
    main()
