"""Collective bandwidth over MPI (mpi4py on Open MPI's TCP transport), printed as nccl-tests
prints it.

Run by `hpn-testbed job examples/jobs/allreduce_mpi.toml` (launcher = "mpi"; or `hpn-testbed run`
on the same file): mpirun starts one rank per host on a rail's NIC, and the testbed tells Open
MPI which NIC each rank's traffic takes (btl_tcp_if_include), so this program needs nothing of the
testbed: it is any MPI program. Rank 0 prints one row per collective and size, as
allreduce_torch.py does:

    collective  size (B)  count  time (us)  algbw (Mbit/s)  busbw (Mbit/s)

size as nccl-tests counts it, algbw = size / time, busbw = algbw x nccl-tests' factor
(all-reduce 2(n-1)/n; all-gather, reduce-scatter and all-to-all (n-1)/n; sendrecv 1).
Usage: allreduce_mpi.py [--ops allreduce,allgather,reducescatter,alltoall,sendrecv]
[--sizes 4K,64K,1M] [--iters 5] [--warmup 1].
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


def sendrecv(comm, send, recv) -> None:
    """Each rank sends to the next and receives from the one before (nccl-tests' sendrecv)."""
    n, rank = comm.Get_size(), comm.Get_rank()
    comm.Sendrecv(send, dest=(rank + 1) % n, recvbuf=recv, source=(rank - 1) % n)


# collective -> (busbw factor over n ranks, elements in and out for `count` elements, the call)
OPS = {
    "allreduce": (lambda n: 2 * (n - 1) / n, lambda c, n: (c, c),
                  lambda comm, send, recv: comm.Allreduce(send, recv, op=MPI.SUM)),
    "allgather": (lambda n: (n - 1) / n, lambda c, n: (c // n, c // n * n),
                  lambda comm, send, recv: comm.Allgather(send, recv)),
    "reducescatter": (lambda n: (n - 1) / n, lambda c, n: (c // n * n, c // n),
                      lambda comm, send, recv: comm.Reduce_scatter(send, recv, [len(recv)] * comm.Get_size(),
                                                                   op=MPI.SUM)),
    "alltoall": (lambda n: (n - 1) / n, lambda c, n: (c // n * n, c // n * n),
                 lambda comm, send, recv: comm.Alltoall(send, recv)),
    "sendrecv": (lambda n: 1.0, lambda c, n: (c, c), sendrecv),
}


def bench(comm, op: str, size: int, iters: int, warmup: int) -> tuple[int, float]:
    """(elements counted, seconds per call: the slowest rank's mean) of collective `op` on
    `size` bytes of float32; an all-reduce's sum is checked (every rank contributes ones, so
    each element must be the number of ranks)."""
    n = comm.Get_size()
    _, shape, call = OPS[op]
    n_in, n_out = shape(max(n, size // 4), n)
    send, recv = np.ones(n_in, dtype=np.float32), np.empty(n_out, dtype=np.float32)
    for _ in range(warmup):
        call(comm, send, recv)
    comm.Barrier()
    start = MPI.Wtime()
    for _ in range(iters):
        call(comm, send, recv)
    took = (MPI.Wtime() - start) / iters
    if op == "allreduce" and not np.all(recv == n):
        raise SystemExit(f"rank {comm.Get_rank()}: wrong all-reduce result")
    return max(n_in, n_out), comm.allreduce(took, op=MPI.MAX)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", default="allreduce", help=f"comma-separated, of {', '.join(OPS)}")
    p.add_argument("--sizes", default="4K,64K,1M", help="bytes, comma-separated (K, M, G)")
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    args = p.parse_args()
    ops = args.ops.split(",")
    if not set(ops) <= set(OPS):
        p.error(f"--ops: choose from {', '.join(OPS)}")
    comm = MPI.COMM_WORLD
    n, rank = comm.Get_size(), comm.Get_rank()
    if rank == 0:
        library = MPI.Get_library_version().splitlines()[0]
        print(f"# {', '.join(ops)} (float32) over {n} ranks, MPI ({library}), {args.iters} iterations")
        print(f"# {'collective':<13} {'size (B)':>10} {'count':>10} {'time (us)':>12} "
              f"{'algbw (Mbit/s)':>15} {'busbw (Mbit/s)':>15}")
    for op in ops:
        for size in (size_of(s) for s in args.sizes.split(",")):
            count, seconds = bench(comm, op, size, args.iters, args.warmup)
            nbytes = count * 4
            algbw = nbytes * 8 / seconds / 1e6
            if rank == 0:
                print(f"{op:<15} {nbytes:>10} {count:>10} {seconds * 1e6:>12.1f} {algbw:>15.3f} "
                      f"{algbw * OPS[op][0](n):>15.3f}", flush=True)


if __name__ == "__main__":
    main()
