"""The traffic of a collective (pure: no root, no Mininet, no processes): who sends how many
bytes to whom, in which phase.

A rank is one GPU, i.e. one NIC (NIC i of a host stands for GPU i). A Transfer between two NICs
of the same host is the intra-host relay that stands in for NVLink: it never touches the fabric
(both addresses are local to the host, so the kernel delivers it over loopback).

    ring_allreduce(fab, hosts, size)      one ring per rail; reduce-scatter then all-gather
    reduce_scatter / all_gather           one ring pass each
    all_to_all(fab, hosts, size)          every GPU to every other; across hosts on the sender's
                                          rail, then relayed inside the host (PXN-style)
    moe_all_to_all(fab, hosts, tokens, m) MoE dispatch + combine with node-limited routing
    pipeline(fab, stages, size)           send/recv between consecutive pipeline stages

Metrics as nccl-tests defines them: algbw = size / time; busbw = algbw x 2(n-1)/n for AllReduce,
x (n-1)/n for all-to-all, all-gather and reduce-scatter, x 1 for send/recv.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from testbed.core.errors import ParamError
from testbed.model.fabric import Fabric, Nic


@dataclass(frozen=True)
class Transfer:
    src: Nic
    dst: Nic
    nbytes: int
    phase: int = 0
    sport: int | None = None     # pin the client port (chooses the 5-tuple, hence the hash)
    dport: int | None = None     # pin the server port; None: the runner picks one

    @property
    def relay(self) -> bool:
        """Inside one host (the NVLink stand-in): never crosses the fabric."""
        return self.src.host == self.dst.host


@dataclass(frozen=True)
class Collective:
    kind: str                    # allreduce | reducescatter | allgather | alltoall | moe | sendrecv
    job: str
    size: int                    # nccl-tests "size": bytes per rank
    ranks: int                   # n in the bus-bandwidth factor
    phase_names: tuple[str, ...]
    transfers: tuple[Transfer, ...]

    def phases(self) -> list[list[Transfer]]:
        by_phase: list[list[Transfer]] = [[] for _ in self.phase_names]
        for t in self.transfers:
            by_phase[t.phase].append(t)
        return by_phase

    def matrix(self, relay: bool | None = False) -> dict[tuple[str, str], int]:
        """(src NIC name, dst NIC name) -> bytes over all phases; relay=None: both kinds."""
        m: dict[tuple[str, str], int] = defaultdict(int)
        for t in self.transfers:
            if relay is None or t.relay == relay:
                m[(t.src.name, t.dst.name)] += t.nbytes
        return dict(m)

    def fabric_bytes(self) -> int:
        return sum(t.nbytes for t in self.transfers if not t.relay)

    def relay_bytes(self) -> int:
        return sum(t.nbytes for t in self.transfers if t.relay)

    def busbw_factor(self) -> float:
        return busbw_factor(self.kind, self.ranks)


def busbw_factor(kind: str, n: int) -> float:
    """nccl-tests' bus-bandwidth factor for a collective over n ranks."""
    if kind == "allreduce":
        return 2 * (n - 1) / n
    if kind in ("alltoall", "allgather", "reducescatter", "moe"):
        return (n - 1) / n
    if kind == "sendrecv":
        return 1.0
    raise ParamError(f"unknown collective kind {kind!r}")


def algbw(size: int, seconds: float) -> float:
    """Algorithm bandwidth in bytes per second."""
    return size / seconds if seconds > 0 else 0.0


def _hosts(fab: Fabric, hosts) -> list:
    names = list(hosts) if hosts is not None else list(fab.hosts)
    for h in names:
        if h not in fab.hosts:
            raise ParamError(f"no host {h!r} in this {fab.family} fabric")
    if len(set(names)) != len(names):
        raise ParamError("a host appears twice")
    return [fab.hosts[h] for h in names]


def _split(total: int, parts: int) -> list[int]:
    """`total` bytes over `parts` pieces, differing by at most one byte, summing to `total`."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def _rails(fab: Fabric, hosts, rails) -> list[int]:
    hs = _hosts(fab, hosts)
    nics = min(len(h.nics) for h in hs)
    chosen = list(range(nics)) if rails is None else list(rails)
    if any(r >= nics or r < 0 for r in chosen):
        raise ParamError(f"rails {chosen}: these hosts have NICs 0..{nics - 1}")
    return chosen


def _ring(kind: str, fab: Fabric, hosts, size: int, passes: list[str], job: str, rails,
          steps: bool, sport_base: int | None) -> Collective:
    hs = _hosts(fab, hosts)
    n = len(hs)
    if n < 2:
        raise ParamError("a ring needs at least two hosts")
    phase_names = [f"{p} step {s + 1}" for p in passes for s in range(n - 1)] if steps else passes
    transfers = []
    for rail in _rails(fab, hosts, rails):
        ring = [h.nics[rail] for h in hs]
        for r, nic in enumerate(ring):
            succ = ring[(r + 1) % n]
            # each pass moves (n-1) chunks of size/n from every rank to its ring successor
            chunks = _split(size, n)
            for p in range(len(passes)):
                sport = None if sport_base is None else sport_base + r
                # step s sends chunk r - s; AllReduce's all-gather starts from the chunk the
                # reduce-scatter left reduced on this rank (r + 1)
                shift = 1 if kind == "allreduce" and p == 1 else 0
                if steps:
                    for s in range(n - 1):
                        chunk = chunks[(r + shift - s) % n]
                        transfers.append(Transfer(nic, succ, chunk, p * (n - 1) + s, sport))
                else:   # every chunk but the one step n-1 would reach
                    transfers.append(Transfer(nic, succ, size - chunks[(r + shift + 1) % n], p, sport))
    return Collective(kind, job, size, n, tuple(phase_names), tuple(transfers))


def ring_allreduce(fab: Fabric, hosts=None, size: int = 1_000_000, job: str = "allreduce",
                   rails=None, steps: bool = False, sport_base: int | None = None) -> Collective:
    """Ring AllReduce of `size` bytes per rank, one ring per rail (NIC i of every host).

    Reduce-scatter then all-gather; each rank sends (n-1)/n x size in each, to its successor.
    steps=True gives every one of the 2(n-1) ring steps its own phase (chunks of size/n)."""
    return _ring("allreduce", fab, hosts, size, ["reduce-scatter", "all-gather"], job, rails,
                 steps, sport_base)


def reduce_scatter(fab: Fabric, hosts=None, size: int = 1_000_000, job: str = "reducescatter",
                   rails=None, steps: bool = False, sport_base: int | None = None) -> Collective:
    return _ring("reducescatter", fab, hosts, size, ["reduce-scatter"], job, rails, steps, sport_base)


def all_gather(fab: Fabric, hosts=None, size: int = 1_000_000, job: str = "allgather",
               rails=None, steps: bool = False, sport_base: int | None = None) -> Collective:
    return _ring("allgather", fab, hosts, size, ["all-gather"], job, rails, steps, sport_base)


def all_to_all(fab: Fabric, hosts=None, size: int = 1_000_000, job: str = "alltoall") -> Collective:
    """nccl-tests all-to-all: every GPU sends size/n to every GPU (n = all NICs of `hosts`).

    A GPU reaches another host on its own rail (in a multi-plane fabric that is the only way),
    and the receiving host relays to the GPU it was meant for: one fabric transfer per (sender,
    host, rail) carries what the sender has for all GPUs of that host (phase 0), then intra-host
    relays (phase 1). The bytes a GPU keeps for itself move nowhere."""
    hs = _hosts(fab, hosts)
    gpus = [nic for h in hs for nic in h.nics]
    n = len(gpus)
    if n < 2:
        raise ParamError("all-to-all needs at least two GPUs")
    piece = _split(size, n)
    transfers = []
    for src in gpus:
        for h in hs:
            if h.name == src.host:
                continue
            via = h.nics[src.index % len(h.nics)]
            total = sum(piece[j] for j, g in enumerate(gpus) if g.host == h.name)
            transfers.append(Transfer(src, via, total, 0))
            for j, g in enumerate(gpus):
                if g.host == h.name and g != via:
                    transfers.append(Transfer(via, g, piece[j], 1))
        for j, g in enumerate(gpus):   # same host, other GPU: straight over the relay
            if g.host == src.host and g != src:
                transfers.append(Transfer(src, g, piece[j], 1))
    return Collective("alltoall", job, size, n, ("fabric", "relay"), tuple(_merge(transfers)))


def moe_bytes_per_token(m: int, hidden: int = 7000, bd: float = 1, bc: float = 2) -> float:
    """Fabric bytes per token per MoE layer with node-limited routing: M x H x (bd + bc) (C11)."""
    return m * hidden * (bd + bc)


def moe_targets(hosts: int, src: int, m: int, token: int = 0, spread: bool = False) -> list[int]:
    """The M nodes (indices into the host list, never the sender's own) a token's experts are on.

    spread=False: every token of a GPU goes to the same M nodes (the next M after its own);
    spread=True: token t starts t nodes further on, so a GPU's tokens cover every node."""
    if not 1 <= m <= hosts - 1:
        raise ParamError(f"M={m}: node-limited routing to other nodes needs 1 <= M <= {hosts - 1}")
    start = token % (hosts - 1) if spread else 0
    return [(src + 1 + (start + k) % (hosts - 1)) % hosts for k in range(m)]


def moe_all_to_all(fab: Fabric, hosts=None, tokens: int = 16, m: int = 4, hidden: int = 7000,
                   bd: int = 1, bc: int = 2, topk: int = 8, job: str = "moe",
                   spread: bool = False) -> Collective:
    """MoE dispatch + combine with node-limited routing, for one MoE layer (forward pass).

    Every GPU (NIC) holds `tokens` tokens of `hidden` values. Each token's `topk` experts sit on
    M nodes other than the sender's; the token crosses the fabric once per node, to the GPU of
    the sender's rail there (hidden x bd bytes, FP8), which relays it over the host (NVLink) to
    the other GPUs of that node holding one of its experts. Combine runs backwards in BF16
    (bc bytes): relays into the receiving GPU, which reduces and sends one copy back.
    Phases: dispatch over the fabric, dispatch relay, combine relay, combine over the fabric.
    Fabric bytes per token = M x hidden x (bd + bc) (moe_bytes_per_token)."""
    hs = _hosts(fab, hosts)
    transfers = []
    for s, h in enumerate(hs):
        for src in h.nics:
            for t in range(tokens):
                targets = moe_targets(len(hs), s, m, t, spread)
                per_node = _split(topk, m)          # experts of this token on each node
                for k, d in enumerate(targets):
                    node = hs[d]
                    via = node.nics[src.index % len(node.nics)]
                    transfers.append(Transfer(src, via, hidden * bd, 0))
                    transfers.append(Transfer(via, src, hidden * bc, 3))
                    gpus = len(node.nics)
                    experts_gpus = {(via.index + e) % gpus for e in range(min(per_node[k], gpus))}
                    for g in sorted(experts_gpus - {via.index}):
                        transfers.append(Transfer(via, node.nics[g], hidden * bd, 1))
                        transfers.append(Transfer(node.nics[g], via, hidden * bc, 2))
    gpus = sum(len(h.nics) for h in hs)
    return Collective("moe", job, tokens * hidden * (bd + bc), gpus,
                      ("dispatch", "dispatch relay", "combine relay", "combine"),
                      tuple(_merge(transfers)))


def pipeline(fab: Fabric, stages: list[list[str]], size: int = 1_000_000, microbatches: int = 1,
             job: str = "pipeline", channels: int = 1, sport_base: int | None = None) -> Collective:
    """Forward send/recv between consecutive pipeline stages (each stage a list of hosts).

    Host i of stage s sends `size` bytes per microbatch from each of its NICs to the NIC of the
    same index on host i of stage s+1, split over `channels` connections (NCCL's channels).
    Phase k carries microbatch k - s out of stage s (the GPipe schedule)."""
    if len(stages) < 2:
        raise ParamError("a pipeline needs at least two stages")
    widths = {len(st) for st in stages}
    if len(widths) != 1:
        raise ParamError("every stage needs the same number of hosts")
    hs = [_hosts(fab, st) for st in stages]
    transfers = []
    nstages = len(stages)
    for k in range(microbatches + nstages - 2):
        for s in range(nstages - 1):
            if not 0 <= k - s < microbatches:
                continue
            for i, (a, b) in enumerate(zip(hs[s], hs[s + 1])):
                for nic in a.nics:
                    dst = b.nics[nic.index % len(b.nics)]
                    for c, part in enumerate(_split(size, channels)):
                        sport = None
                        if sport_base is not None:   # unique per (stage, host, NIC, channel)
                            sport = sport_base + ((s * len(hs[s]) + i) * len(a.nics) + nic.index) \
                                * channels + c
                        transfers.append(Transfer(nic, dst, part, k, sport))
    names = tuple(f"microbatch step {k + 1}" for k in range(microbatches + nstages - 2))
    return Collective("sendrecv", job, size, 2, names, tuple(transfers))


def _merge(transfers: list[Transfer]) -> list[Transfer]:
    """One transfer per (src, dst, phase, ports): bytes summed, first-seen order kept."""
    merged: dict[tuple, int] = {}
    for t in transfers:
        key = (t.src, t.dst, t.phase, t.sport, t.dport)
        merged[key] = merged.get(key, 0) + t.nbytes
    return [Transfer(src, dst, b, phase, sport, dport)
            for (src, dst, phase, sport, dport), b in merged.items()]


__all__ = ["Transfer", "Collective", "ring_allreduce", "reduce_scatter", "all_gather", "all_to_all",
           "moe_all_to_all", "moe_bytes_per_token", "moe_targets", "pipeline", "busbw_factor",
           "algbw"]
