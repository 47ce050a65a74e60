"""How bring-up, teardown, memory and idle CPU grow with an HPN segment's NIC count.

    sudo .venv/bin/python bench/scale.py [--nics 64 256 512 1088]

One pod, one segment, 8 NICs per host on 8 rails (dual-ToR: 16 ToRs), the segment preset's
uplink tier; hosts = NICs / 8. At each size: our bring-up per phase (network built, hosts
configured and links shaped, the controller learning every NIC port and every switch holding
its routes), teardown, peak memory in use (MemTotal - MemAvailable, sampled), the CPU busy with
the fabric up and idle, and stock Mininet building and tearing down the same switches, hosts
and links (no controller) in the same process: the ratio ours / stock, and each side's
seconds per switch and per cable (up + down: the anchors' units, Mininet's published switches
per second). Then the fitted growth exponent of each phase (log-log slope over every size
measured, 64 NICs on by default): 1.0 is linear.
"""
from __future__ import annotations

import argparse
import math
import threading
import time
from pathlib import Path

from stock import stock_mininet

from testbed.emulation.build import Emulation, Options
from testbed.measure.meters import cpu_busy_fraction
from testbed.model import families, make_fabric

PHASES = ("network", "hosts", "learning", "teardown")


def mem_used_mb() -> float:
    info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    kb = lambda key: int(info[key].split()[0])   # noqa: E731
    return (kb("MemTotal") - kb("MemAvailable")) / 1024


class PeakMemory:
    """The most memory in use while the block runs, above what was in use when it began."""

    def __enter__(self):
        self.base = self.peak = mem_used_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, mem_used_mb())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    @property
    def mb(self) -> float:
        return self.peak - self.base


def fabric_of(nics: int):
    settings = dict(families.get("hpn").preset("segment"), hosts=max(nics // 8, 2), backup_hosts=0)
    return make_fabric("hpn", settings)


def measure(nics: int) -> dict:
    fabric = fabric_of(nics)
    stock_up, stock_down = stock_mininet(fabric)
    with PeakMemory() as mem:
        t0 = time.monotonic()
        with Emulation(fabric, Options(ready_timeout=600)) as emu:
            t = emu.timings
            _, busy = cpu_busy_fraction(lambda: time.sleep(3))
            t_down = time.monotonic()
        teardown = time.monotonic() - t_down
    return {"nics": len(fabric.nics()), "links": len(fabric.links), "switches": len(fabric.switches),
            "network": t["network"] - t["controller"], "hosts": t["hosts"] - t["network"],
            "learning": t["ready"] - t["hosts"], "teardown": teardown,
            "ours": (t_down - t0) + teardown, "stock": stock_up + stock_down,
            "stock_up": stock_up, "up": t["ready"], "peak_mb": mem.mb, "idle_busy": busy}


def slope(rows: list[dict], key: str) -> float:
    """Least-squares slope of log(key) against log(NICs)."""
    xs = [math.log(r["nics"]) for r in rows]
    ys = [math.log(max(r[key], 1e-3)) for r in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def per_unit(r: dict, key: str) -> str:
    """`key`'s lifecycle (up + down) in seconds per switch and per cable."""
    return f"{r[key] / r['switches']:>6.2f} {r[key] / r['links']:>6.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nics", type=int, nargs="+", default=[64, 256, 512, 1088])
    args = ap.parse_args()
    rows = []
    print(f"{'NICs':>5} {'switch':>6} {'links':>5} {'network':>8} {'hosts':>6} {'learning':>8} "
          f"{'teardown':>8} {'peak MB':>7} {'idle CPU':>8} {'ours s/sw':>9} {'s/cable':>7} "
          f"{'stock s/sw':>10} {'s/cable':>7} {'ours/stock':>10}")
    for n in args.nics:
        r = measure(n)
        rows.append(r)
        print(f"{r['nics']:>5} {r['switches']:>6} {r['links']:>5} {r['network']:>7.1f}s "
              f"{r['hosts']:>5.1f}s {r['learning']:>7.1f}s {r['teardown']:>7.1f}s "
              f"{r['peak_mb']:>7.0f} {r['idle_busy']:>7.0%}   {per_unit(r, 'ours')}    "
              f"{per_unit(r, 'stock')} {r['ours'] / r['stock']:>10.2f}", flush=True)
    if len(rows) >= 2:
        print(f"growth exponents from {rows[0]['nics']} to {rows[-1]['nics']} NICs "
              "(time ~ NICs^k; 1.0 is linear): "
              + ", ".join(f"{k} {slope(rows, k):.2f}" for k in (*PHASES, "up", "ours", "stock")))


if __name__ == "__main__":
    main()
