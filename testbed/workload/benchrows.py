"""A collective benchmark's rows, as nccl-tests prints them, read from a rank's output, and the
fluid model's bound on their bus bandwidth for the job's placement (pure: no root).

A row is one line a rank prints (examples/jobs/allreduce_torch.py and allreduce_mpi.py do):

    KIND  SIZE  COUNT  TIME_US  ALGBW_MBIT  BUSBW_MBIT

KIND one of KINDS, SIZE bytes per rank, algbw = SIZE / time and busbw = algbw x nccl-tests'
factor (testbed.workload.collectives.busbw_factor), both in Mbit/s (the emulated rates are).

The bound: the flows that run at once in the fluid model (max-min fair), each held by its
sending NIC's line, its receiving NIC's line and the slowest link on its shortest paths (a TCP
connection takes one path; the bound assumes the connections' hashes do not collide). A ring
(all-reduce, all-gather, reduce-scatter, sendrecv: rank r to r+1) moves at its slowest hop, and
busbw is that hop's rate. An all-to-all is modelled as gloo and Open MPI run it, a pairwise
exchange: n-1 steps, in step k rank r sends its 1/n to rank r+k, each step as slow as its
slowest flow (a library that sends to every peer at once, as NCCL's grouped sends do, could
pass it).
"""
from __future__ import annotations

from dataclasses import dataclass

from testbed.model import fluid
from testbed.model.routing import shortest_path_links

KINDS = ("allreduce", "allgather", "reducescatter", "alltoall", "sendrecv")


@dataclass(frozen=True)
class Row:
    kind: str
    size: int            # bytes per rank
    time_us: float
    algbw_mbit: float
    busbw_mbit: float


def rows(text: str) -> list[Row]:
    """Every benchmark row of a rank's output, in order; other lines are skipped."""
    out = []
    for line in text.splitlines():
        words = line.split()
        if len(words) != 6 or words[0] not in KINDS:
            continue
        try:
            size, time_us, algbw, busbw = int(words[1]), *map(float, words[3:])
        except ValueError:
            continue
        out.append(Row(words[0], size, time_us, algbw, busbw))
    return out


def steps(kind: str, n: int) -> list[list[tuple[int, int]]]:
    """(sender, receiver) ranks of the flows that run at once, step by step: a ring's one step
    (rank r to r+1); an all-to-all's n-1 (step k: rank r to r+k, the pairwise exchange)."""
    if kind == "alltoall":
        return [[(r, (r + k) % n) for r in range(n)] for k in range(1, n)]
    return [[(r, (r + 1) % n) for r in range(n)]]


def slowest_mbit(fab, pairs: list) -> float:
    """The slowest of `pairs`' (src NIC, dst NIC) flows, all at once, in the fluid model."""
    capacity, paths = {}, []
    for i, (src, dst) in enumerate(pairs):
        capacity[("send", src.name)] = fab.line_mbit(src)
        capacity[("recv", dst.name)] = fab.line_mbit(dst)
        capacity[("path", i)] = (min(fab.link_mbit(l) for l in shortest_path_links(fab, src, dst))
                                 if src.host != dst.host else fab.line_mbit(src))
        paths.append([("send", src.name), ("path", i), ("recv", dst.name)])
    return min(fluid.max_min(capacity, paths))


def bound_mbit(fab, kind: str, nics: list) -> float | None:
    """The most busbw a `kind` collective over ranks on `nics` (rank order) can show, Mbit/s;
    None for fewer than two ranks or two ranks on one NIC (no fabric flow to bound)."""
    n = len(nics)
    if n < 2 or len({nic.name for nic in nics}) < n:
        return None
    rates = [slowest_mbit(fab, [(nics[a], nics[b]) for a, b in step]) for step in steps(kind, n)]
    # every step moves the same bytes per rank: busbw = (n-1)/n * size / T over n-1 steps of
    # size/n each is (n-1) / sum(1/rate); a ring's one step gives its rate
    return round(len(rates) / sum(1 / r for r in rates), 3)


def nics_of(fab, ranks) -> list:
    """The model's NIC of each placed rank (workload.jobs.Rank), in rank order."""
    by_name = {nic.name: nic for nic in fab.nics()}
    return [by_name[r.nic] for r in sorted(ranks, key=lambda r: r.rank)]
