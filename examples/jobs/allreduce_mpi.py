"""All-reduce bandwidth over MPI (mpi4py on Open MPI's TCP transport), printed as nccl-tests
prints it.

Run by `hpn-testbed job examples/jobs/allreduce_mpi.toml` (launcher = "mpi"): mpirun starts one
rank per host on a rail's NIC, and the testbed tells Open MPI which NIC each rank's traffic takes
(btl_tcp_if_include), so this program needs nothing of the testbed: it is any MPI program.

    size (B)  count  time (us)  algbw (GB/s)  busbw (GB/s)

algbw is size / time; busbw = algbw * 2 (n - 1) / n, the bytes each rank's link carries in a
ring all-reduce, so it compares with the line rate whatever the number of ranks (nccl-tests,
PERFORMANCE.md). Usage: allreduce_mpi.py [--sizes 4K,64K,1M] [--iters 5] [--warmup 1].
"""
from __future__ import annotations

import argparse

import numpy as np
from mpi4py import MPI

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size_of(text: str) -> int:
    text = text.strip().upper().removesuffix("B")
    unit = text[-1:] if text[-1:] in UNITS else ""
    return int(float(text[:len(text) - len(unit)]) * UNITS[unit])


def bench(comm, size: int, iters: int, warmup: int) -> float:
    """Seconds per all-reduce of `size` bytes of float32, the slowest rank's mean; the sum is
    checked (every rank contributes ones, so each element must be the number of ranks)."""
    send = np.ones(max(1, size // 4), dtype=np.float32)
    recv = np.empty_like(send)
    for _ in range(warmup):
        comm.Allreduce(send, recv, op=MPI.SUM)
    comm.Barrier()
    start = MPI.Wtime()
    for _ in range(iters):
        comm.Allreduce(send, recv, op=MPI.SUM)
    took = (MPI.Wtime() - start) / iters
    if not np.all(recv == comm.Get_size()):
        raise SystemExit(f"rank {comm.Get_rank()}: wrong all-reduce result")
    return comm.allreduce(took, op=MPI.MAX)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="4K,64K,1M", help="bytes per rank, comma-separated (K, M, G)")
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    args = p.parse_args()
    comm = MPI.COMM_WORLD
    n, rank = comm.Get_size(), comm.Get_rank()
    if rank == 0:
        library = MPI.Get_library_version().splitlines()[0]
        print(f"# all-reduce (sum, float32) over {n} ranks, MPI ({library}), {args.iters} iterations")
        print(f"{'size (B)':>12} {'count':>10} {'time (us)':>12} {'algbw (GB/s)':>13} {'busbw (GB/s)':>13}")
    for size in (size_of(s) for s in args.sizes.split(",")):
        seconds = bench(comm, size, args.iters, args.warmup)
        algbw = size / seconds / 1e9
        if rank == 0:
            print(f"{size:>12} {max(1, size // 4):>10} {seconds * 1e6:>12.1f} {algbw:>13.4f} "
                  f"{algbw * 2 * (n - 1) / n:>13.4f}", flush=True)


if __name__ == "__main__":
    main()
