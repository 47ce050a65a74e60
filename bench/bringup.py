"""Bring-up + teardown of the default HPN against stock Mininet building the same counts.

    sudo .venv/bin/python bench/bringup.py [--family hpn] [--rounds 3]

Stock: Mininet's own Topo with the same switches, hosts and links, OVSBridge (no controller),
on the same datapath. Ours adds the controller, host bonding, link shaping, GARP learning and
waiting until every switch holds its routes. Prints both medians over the rounds, the ratio
ours / stock (target <= 0.5, issue 27), each side's seconds per switch and per cable (the
anchors' units: Mininet's published switches per second), and where our time goes.
"""
from __future__ import annotations

import argparse
import statistics
import time

from stock import stock_mininet

from testbed.emulation.build import Emulation
from testbed.emulation.net import system
from testbed.model import make_fabric


def stock(fabric) -> tuple[float, float]:
    return stock_mininet(fabric)


def ours(fabric) -> tuple[float, dict]:
    t0 = time.monotonic()
    with Emulation(fabric) as emu:
        timings = dict(emu.timings)
        up = time.monotonic() - t0
    total = time.monotonic() - t0
    timings["up"], timings["teardown"] = up, total - up
    return total, timings


def per_unit(name: str, up: float, down: float, fabric) -> str:
    s, c = len(fabric.switches), len(fabric.links)
    return (f"{name}: up {up:.2f} s, down {down:.2f} s; per switch {(up + down) / s * 1e3:.0f} ms, "
            f"per cable {(up + down) / c * 1e3:.0f} ms (up + down)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="hpn")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    fabric = make_fabric(args.family)
    base, mine, parts = [], [], []
    stock_parts = []
    for _ in range(args.rounds):   # interleaved, so drift on the machine hits both alike
        stock_parts.append(stock(fabric))
        base.append(sum(stock_parts[-1]))
        t, timing = ours(fabric)
        mine.append(t)
        parts.append(timing)
    b, m = statistics.median(base), statistics.median(mine)
    print(f"{args.family}: {len(fabric.switches)} switches, {len(fabric.hosts)} hosts, "
          f"{len(fabric.links)} links, datapath {system.datapath()}, {args.rounds} rounds")
    print(f"stock Mininet (OVSBridge, no controller): median {b:.2f} s  (rounds: "
          + ", ".join(f"{x:.2f}" for x in base) + ")")
    print(f"hpn-testbed up + teardown:              median {m:.2f} s  (rounds: "
          + ", ".join(f"{x:.2f}" for x in mine) + ")")
    print(f"ratio ours/stock: {m / b:.2f}  (target <= 0.5)")
    steps = {k: statistics.median(p[k] for p in parts) for k in parts[0]}
    print(per_unit("stock", statistics.median(u for u, _ in stock_parts),
                   statistics.median(d for _, d in stock_parts), fabric))
    print(per_unit("ours ", steps["up"], steps["teardown"], fabric))
    prev, shares = 0.0, []
    for k in ("controller", "network", "hosts", "ready"):   # cumulative marks -> per-step times
        shares.append((k, steps[k] - prev))
        prev = steps[k]
    shares.append(("teardown", steps["teardown"]))
    print("where our time goes: " + ", ".join(f"{k} {v:.2f} s" for k, v in shares))


if __name__ == "__main__":
    main()
