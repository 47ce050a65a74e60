"""The fluid (max-min fair) model of flows on links: the rates TCP-like flows converge to, and
how long a set of transfers takes when every flow runs at that rate until it is done.

A link is any hashable name with a capacity (a rate, in any unit); a flow is its path, the
list of links it crosses, and may have a demand (the most it would send, e.g. a paced sender or
its NIC's line rate). Progressive filling: every flow's rate grows at the same pace; when a link
is full (or a flow reaches its demand) the flows through it stop growing, and the rest go on
filling what is left. The result is the max-min fair allocation: no flow can get more without
taking from one that has no more than it.

Completion: the allocation is recomputed each time a flow finishes, so the capacity it freed goes
to the flows still running (sizes are in the capacity's unit times seconds: Mbit for Mbit/s).

Pure: no fabric, no emulation. The scenarios build the links and paths from traced hops and
compare what they measure with what this predicts.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

EPS = 1e-9      # relative: a link within this of full is full, a flow within it of done is done


def max_min(capacity: Mapping[Hashable, float], paths: Sequence[Sequence[Hashable]],
            demands: Sequence[float | None] | None = None) -> list[float]:
    """The max-min fair rate of each flow (`paths[i]`: the links flow i crosses).

    A link a flow names twice counts once. A flow needs a link or a demand to be bounded;
    ValueError for a flow with neither, a link without a capacity, or a negative figure.
    """
    demands = list(demands) if demands is not None else [None] * len(paths)
    if len(demands) != len(paths):
        raise ValueError(f"{len(paths)} paths but {len(demands)} demands")
    on = [set(p) for p in paths]
    for i, links in enumerate(on):
        if not links and demands[i] is None:
            raise ValueError(f"flow {i} crosses no link and has no demand: its rate is unbounded")
        if demands[i] is not None and demands[i] < 0:
            raise ValueError(f"flow {i} has a negative demand {demands[i]}")
        for link in links:
            if link not in capacity:
                raise ValueError(f"flow {i} crosses {link!r}, which has no capacity")
            if capacity[link] < 0:
                raise ValueError(f"link {link!r} has a negative capacity {capacity[link]}")
    rate = [0.0] * len(paths)
    left = {link: float(capacity[link]) for links in on for link in links}
    growing = set(range(len(paths)))
    while growing:
        users = {link: [i for i in growing if link in on[i]] for link in left}
        step = min([left[link] / len(u) for link, u in users.items() if u]
                   + [demands[i] - rate[i] for i in growing if demands[i] is not None])
        step = max(step, 0.0)
        for i in growing:
            rate[i] += step
        for link, u in users.items():
            left[link] -= step * len(u)
        full = {link for link, u in users.items() if u and left[link] <= EPS * max(1.0, capacity[link])}
        done = {i for i in growing if on[i] & full
                or (demands[i] is not None and rate[i] >= demands[i] * (1 - EPS))}
        growing -= done
    return rate


def completion(capacity: Mapping[Hashable, float], paths: Sequence[Sequence[Hashable]],
               sizes: Sequence[float], demands: Sequence[float | None] | None = None) -> list[float]:
    """When each flow finishes if all start at 0 and the rates are max-min fair at every moment.

    A flow of size 0 finishes at 0; one that can get no rate (a link of capacity 0) never does
    (math.inf).
    """
    if len(sizes) != len(paths):
        raise ValueError(f"{len(paths)} paths but {len(sizes)} sizes")
    if any(s < 0 for s in sizes):
        raise ValueError("a negative size")
    demands = list(demands) if demands is not None else [None] * len(paths)
    left = [float(s) for s in sizes]
    finish = [0.0 if s == 0 else math.inf for s in sizes]
    running = [i for i, s in enumerate(sizes) if s > 0]
    now = 0.0
    while running:
        rates = max_min(capacity, [paths[i] for i in running], [demands[i] for i in running])
        moving = [(i, r) for i, r in zip(running, rates) if r > 0]
        if not moving:
            break                       # the rest can never finish
        dt = min(left[i] / r for i, r in moving)
        now += dt
        for i, r in moving:
            left[i] -= r * dt
            if left[i] <= EPS * sizes[i]:
                finish[i] = now
        running = [i for i in running if math.isinf(finish[i])]
    return finish


def makespan(capacity: Mapping[Hashable, float], paths: Sequence[Sequence[Hashable]],
             sizes: Sequence[float], demands: Sequence[float | None] | None = None) -> float:
    """When the last flow finishes (0 for no flows)."""
    return max(completion(capacity, paths, sizes, demands), default=0.0)
