"""Collective bandwidth over torch.distributed (gloo, CPU), printed as nccl-tests prints it.

Run by `hpn-testbed job examples/jobs/allreduce_torch.toml` (or `hpn-testbed run` on the same
file), one rank per host on a rail's NIC: the launcher's environment (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT) says who is who, and GLOO_SOCKET_IFNAME the interface of this rank's
NIC, which gloo binds to, as on a real cluster. Rank 0 prints one row per collective and size:

    collective  size (B)  count  time (us)  algbw (Mbit/s)  busbw (Mbit/s)

size as nccl-tests counts it (all-reduce, reduce-scatter, all-to-all: each rank's buffer;
all-gather: the gathered buffer; sendrecv: what each rank sends to the next), algbw = size /
time, busbw = algbw x nccl-tests' factor (all-reduce 2(n-1)/n; all-gather, reduce-scatter and
all-to-all (n-1)/n; sendrecv 1): what each rank's link carries, comparable with the line rate
whatever the number of ranks (nccl-tests, PERFORMANCE.md). In Mbit/s, as the testbed's rates are.
Usage: allreduce_torch.py [--ops allreduce,allgather,reducescatter,alltoall,sendrecv]
[--sizes 4K,64K,1M] [--iters 5] [--warmup 1].
"""
from __future__ import annotations

import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size_of(text: str) -> int:
    text = text.strip().upper().removesuffix("B")
    unit = text[-1:] if text[-1:] in UNITS else ""
    return int(float(text[:len(text) - len(unit)]) * UNITS[unit])


def init() -> None:
    """Join the job's process group: gloo over the NIC that GLOO_SOCKET_IFNAME names, with a
    rendezvous timeout long enough for ranks that start slowly."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    master = f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    dist.init_process_group("gloo", init_method=master, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))


def sendrecv(out, tensor) -> None:
    """Each rank sends to the next and receives from the one before (nccl-tests' sendrecv)."""
    n, rank = dist.get_world_size(), dist.get_rank()
    for request in (dist.isend(tensor, (rank + 1) % n), dist.irecv(out, (rank - 1) % n)):
        request.wait()


# the names of newer torch releases, else the older ones
GATHER = getattr(dist, "all_gather_single", dist.all_gather_into_tensor)
SCATTER = getattr(dist, "reduce_scatter_single", dist.reduce_scatter_tensor)
# collective -> (busbw factor over n ranks, elements in and out for `count` elements, the call)
OPS = {
    "allreduce": (lambda n: 2 * (n - 1) / n, lambda c, n: (c, c),
                  lambda out, tensor: dist.all_reduce(tensor)),
    "allgather": (lambda n: (n - 1) / n, lambda c, n: (c // n, c // n * n),
                  lambda out, tensor: GATHER(out, tensor)),
    "reducescatter": (lambda n: (n - 1) / n, lambda c, n: (c // n * n, c // n),
                      lambda out, tensor: SCATTER(out, tensor)),
    "alltoall": (lambda n: (n - 1) / n, lambda c, n: (c // n * n, c // n * n),
                 lambda out, tensor: dist.all_to_all_single(out, tensor)),
    "sendrecv": (lambda n: 1.0, lambda c, n: (c, c), sendrecv),
}


def bench(op: str, size: int, iters: int, warmup: int) -> tuple[int, float]:
    """(elements counted, seconds per call: the slowest rank's mean) of collective `op` on
    `size` bytes of float32."""
    n = dist.get_world_size()
    count = max(n, size // 4)
    _, shape, call = OPS[op]
    n_in, n_out = shape(count, n)
    tensor, out = torch.ones(n_in, dtype=torch.float32), torch.empty(n_out, dtype=torch.float32)
    for _ in range(warmup):
        call(out, tensor)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        call(out, tensor)
    took = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
    dist.all_reduce(took, op=dist.ReduceOp.MAX)
    return max(n_in, n_out), took.item()


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
    init()
    n, rank = dist.get_world_size(), dist.get_rank()
    if rank == 0:
        print(f"# {', '.join(ops)} (float32) over {n} ranks, gloo, {args.iters} iterations")
        print(f"# {'collective':<13} {'size (B)':>10} {'count':>10} {'time (us)':>12} "
              f"{'algbw (Mbit/s)':>15} {'busbw (Mbit/s)':>15}")
    for op in ops:
        for size in (size_of(s) for s in args.sizes.split(",")):
            count, seconds = bench(op, size, args.iters, args.warmup)
            nbytes = count * 4
            algbw = nbytes * 8 / seconds / 1e6
            if rank == 0:
                print(f"{op:<15} {nbytes:>10} {count:>10} {seconds * 1e6:>12.1f} {algbw:>15.3f} "
                      f"{algbw * OPS[op][0](n):>15.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
