"""All-reduce bandwidth over torch.distributed (gloo, CPU), printed as nccl-tests prints it.

Run by `hpn-testbed job examples/jobs/allreduce_torch.toml`, one rank per host on a rail's NIC:
the launcher's environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) says who is who, and
GLOO_SOCKET_IFNAME the interface of this rank's NIC, which gloo binds to, as on a real cluster.

    size (B)  count  time (us)  algbw (GB/s)  busbw (GB/s)

algbw is size / time; busbw = algbw * 2 (n - 1) / n, the bytes each rank's link carries in a
ring all-reduce, so it compares with the line rate whatever the number of ranks (nccl-tests,
PERFORMANCE.md). Usage: allreduce_torch.py [--sizes 4K,64K,1M] [--iters 5] [--warmup 1].
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


def bench(size: int, iters: int, warmup: int) -> float:
    """Seconds per all-reduce of `size` bytes of float32, the slowest rank's mean."""
    tensor = torch.ones(max(1, size // 4), dtype=torch.float32)
    for _ in range(warmup):
        dist.all_reduce(tensor)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(tensor)
    took = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
    dist.all_reduce(took, op=dist.ReduceOp.MAX)
    return took.item()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="4K,64K,1M", help="bytes per rank, comma-separated (K, M, G)")
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    args = p.parse_args()
    init()
    n, rank = dist.get_world_size(), dist.get_rank()
    if rank == 0:
        print(f"# all-reduce (sum, float32) over {n} ranks, gloo, {args.iters} iterations")
        print(f"{'size (B)':>12} {'count':>10} {'time (us)':>12} {'algbw (GB/s)':>13} {'busbw (GB/s)':>13}")
    for size in (size_of(s) for s in args.sizes.split(",")):
        seconds = bench(size, args.iters, args.warmup)
        algbw = size / seconds / 1e9
        if rank == 0:
            print(f"{size:>12} {max(1, size // 4):>10} {seconds * 1e6:>12.1f} {algbw:>13.4f} "
                  f"{algbw * 2 * (n - 1) / n:>13.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
