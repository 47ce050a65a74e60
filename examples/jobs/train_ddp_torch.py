"""A tiny data-parallel training job: torch DDP over gloo (CPU) on synthetic data, one line per step.

Every step computes (emulated by `--compute` s of sleep: the model is tiny, so the step's time is
the fabric's plus a fixed compute time), then DDP all-reduces the gradients across the ranks and
the optimizer steps. Each rank prints, as the step ends:

    step N  T  DT  LOSS

T the end of the step on CLOCK_MONOTONIC (s; one clock for every process of the machine, so a
fault's time can be set beside it), DT the step's duration (s). A collective that waits longer
than `--timeout` s fails the rank (gloo raises; the rank exits non-zero), as a real job does when
a peer's link is gone. Joins its process group as allreduce_torch.py does (over the NIC that
GLOO_SOCKET_IFNAME names, with that script's rendezvous timeout: the ranks may start slowly), then
trains in a group of its own whose collectives have the `--timeout`.
Run by the training-fault scenario (C17); by hand from a job file, e.g.
`command = "{python} train_ddp_torch.py --steps 50"`.
Usage: train_ddp_torch.py [--steps 100] [--compute 0.1] [--timeout 3] [--width 64].
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import threading
import time

import torch
import torch.distributed as dist
from allreduce_torch import init
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--compute", type=float, default=0.1, help="s of (emulated) compute per step")
    p.add_argument("--timeout", type=float, default=3.0, help="s a collective may wait")
    p.add_argument("--width", type=int, default=64, help="hidden width of the model")
    args = p.parse_args()
    torch.manual_seed(0)                 # every rank starts from the same model (DDP checks it)
    torch.set_num_threads(1)
    init()
    group = dist.new_group(timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(32, args.width), torch.nn.ReLU(), torch.nn.Linear(args.width, 1)),
        process_group=group)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.Generator().manual_seed(rank)     # each rank its own shard of synthetic data
    print(f"# training: {world} ranks, {args.steps} steps, {args.compute} s compute per step, "
          f"collective timeout {args.timeout} s", flush=True)
    last = time.monotonic()
    for step in range(args.steps):
        x = torch.randn(16, 32, generator=data)
        time.sleep(args.compute)
        loss = torch.nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()                   # DDP's all-reduce of the gradients
        optimizer.step()
        now = time.monotonic()
        print(f"step {step} {now:.3f} {now - last:.3f} {loss.item():.4f}", flush=True)
        last = now
    leave(args.timeout)


def leave(timeout: float) -> None:
    """Tear the process groups down, but wait no longer than `timeout` s: after a fault, closing
    gloo's connections can block (a dual-ToR run once had every step done and both ranks stuck
    in destroy_process_group), and a job whose work is done must not hang on its goodbye."""
    teardown = threading.Thread(target=dist.destroy_process_group, daemon=True)
    teardown.start()
    teardown.join(timeout)
    if teardown.is_alive():
        print(f"# destroy_process_group blocked for {timeout:g} s; exiting anyway", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
