"""Collectives as traffic: who sends how many bytes to whom, in which phase; and a runner.

The pattern functions are pure (no root, no Mininet): they turn a collective into Transfers.
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

`run(emu, collectives)` executes collectives on a running Emulation: one TCP connection per
transfer carrying exactly its bytes (a small agent per host and phase, see AGENT for why not
iperf3 -n), phases in sequence, jobs concurrently (one thread per job); it returns completion
times (until the receiver read the last byte) and bandwidths.
"""
from __future__ import annotations

import json
import subprocess
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

from testbed.core.errors import ParamError, TestbedError
from testbed.model.fabric import Fabric, Nic

# ---------------------------------------------------------------------------------------------
# the traffic of a collective (pure)


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
    for i, src in enumerate(gpus):
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


# ---------------------------------------------------------------------------------------------
# running a collective on an Emulation (needs root)
#
# Why not iperf3 -n: its client ends the test once it has *written* the last byte, and the server
# stops reading and closes its sockets when told so; what was still in socket buffers is never
# delivered. Measured here on MPFT with -w 64K: 677-699 KB of 750 KB received per flow, 4.97 MB
# of 6 MB of an all-to-all delivered. A collective needs every byte delivered and the time the
# last one arrived, so each host runs a small agent (AGENT, plain Python sockets) per phase: it
# listens, says "ready", waits for "go", sends its transfers, and a transfer is complete when the
# receiver has read every byte (it closes; the sender sees EOF).

SERVER_PORT_BASE = 5301
AGENT_MARKER = "hpn-xfer"
AGENT = r"""
import json, socket, sys, threading, time, fcntl, struct, collections
spec = json.loads(sys.argv[2])
out = {"recv": [], "send": [], "err": []}
lock = threading.Lock()
readers = []
def listener(ip, port, conns, idx, srv):
    try:
        for _ in range(conns):
            c, _a = srv.accept()
            t = threading.Thread(target=reader, args=(c, idx))
            t.start()
            with lock:
                readers.append(t)
    except Exception as e:
        out["err"].append("listen %s:%d %r" % (ip, port, e))
def reader(c, idx):
    n, first = 0, None
    try:
        while True:
            b = c.recv(262144)
            if not b:
                break
            if first is None:
                first = time.monotonic()
            n += len(b)
    except Exception as e:
        out["err"].append("recv %r" % e)
    last = time.monotonic()
    c.close()
    with lock:
        out["recv"].append([idx, n, first, last])
OUTQ = 0x5411   # SIOCOUTQ: bytes not yet acknowledged
def queued(s):
    return struct.unpack("i", fcntl.ioctl(s.fileno(), OUTQ, b"\0\0\0\0"))[0]
def sender(idx, item):
    try:
        socks = []
        for src, sport, dst, dport in item["conns"]:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((src, sport))
            if item.get("rate"):   # SO_MAX_PACING_RATE: the kernel paces TCP at this rate
                s.setsockopt(socket.SOL_SOCKET, 47, int(item["rate"]))
            s.connect((dst, dport))
            socks.append(s)
        t0 = time.monotonic()
        total, msg = item["bytes"], item.get("message") or item["bytes"]
        per_conn = [0] * len(socks)
        if len(socks) == 1:
            buf = b"\0" * 262144
            left = total
            while left:
                left -= socks[0].send(buf[:min(left, len(buf))])
            per_conn[0] = total
        else:
            # messages go to a connection by policy; each connection has a thread and a queue
            queues = [collections.deque() for _ in socks]
            backlog = [0] * len(socks)
            cv = threading.Condition()
            def drain(k):
                data = b"\0" * msg
                while True:
                    with cv:
                        while not queues[k]:
                            cv.wait()
                        size = queues[k].popleft()
                    if size is None:
                        return
                    view = memoryview(data)[:size]
                    while view:
                        view = view[socks[k].send(view):]
                    with cv:
                        backlog[k] -= size
                        cv.notify_all()
            threads = [threading.Thread(target=drain, args=(k,)) for k in range(len(socks))]
            for t in threads:
                t.start()
            left, rr = total, 0
            limit = item.get("inflight", 2 * msg)
            while left:
                size = min(msg, left)
                with cv:
                    if item["policy"] == "least-queued":
                        # queued bytes = what waits in our queue + what the kernel holds unacked
                        while True:
                            load = [backlog[k] + queued(socks[k]) for k in range(len(socks))]
                            k = min(range(len(socks)), key=lambda k: (load[k], k))
                            if backlog[k] < limit:
                                break
                            cv.wait(0.002)
                    else:   # round-robin over the connections, as channels do
                        k = rr % len(socks)
                        rr += 1
                        while backlog[k] >= limit:
                            cv.wait(0.002)
                    queues[k].append(size)
                    backlog[k] += size
                    per_conn[k] += size
                    cv.notify_all()
                left -= size
            with cv:
                for q in queues:
                    q.append(None)
                cv.notify_all()
            for t in threads:
                t.join()
        for s in socks:
            s.shutdown(socket.SHUT_WR)
        for s in socks:    # the receiver closes once it has read everything
            while s.recv(65536):
                pass
            s.close()
        with lock:
            out["send"].append([idx, t0, time.monotonic(), per_conn])
    except Exception as e:
        with lock:
            out["err"].append("send %d %r" % (idx, e))
threads, servers = [], []
for ip, port, conns, idx in spec["listen"]:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((ip, port))
    srv.listen(64)
    servers.append(srv)
    threads.append(threading.Thread(target=listener, args=(ip, port, conns, idx, srv)))
for t in threads:
    t.start()
print("ready", flush=True)
sys.stdin.readline()
senders = [threading.Thread(target=sender, args=(idx, item)) for idx, item in spec["send"]]
for t in senders:
    t.start()
for t in senders:
    t.join()
deadline = time.monotonic() + float(spec.get("timeout", 120))
for t in threads:   # listeners first: once they are done, every reader exists
    t.join(max(0.0, deadline - time.monotonic()))
for t in list(readers):
    t.join(max(0.0, deadline - time.monotonic()))
print(json.dumps(out), flush=True)
"""


@dataclass
class FlowRecord:
    src: str
    dst: str
    phase: int
    requested: int
    received: int            # bytes the receiver read
    sport: int | None
    dport: int
    relay: bool
    seconds: float           # from "go" until the receiver had read the last byte
    per_conn: list[int] = field(default_factory=list)   # bytes per connection (path selection)


@dataclass
class CollectiveRun:
    job: str
    kind: str
    size: int
    ranks: int
    seconds: float                       # completion time of all phases
    phase_seconds: list[float]
    flows: list[FlowRecord] = field(default_factory=list)

    @property
    def algbw(self) -> float:
        """Bytes per second (nccl-tests' algbw)."""
        return algbw(self.size, self.seconds)

    @property
    def busbw(self) -> float:
        return self.algbw * busbw_factor(self.kind, self.ranks)

    def summary(self) -> dict:
        return {"job": self.job, "kind": self.kind, "size": self.size, "ranks": self.ranks,
                "seconds": round(self.seconds, 3),
                "phase_seconds": [round(s, 3) for s in self.phase_seconds],
                "algbw_mbit": round(self.algbw * 8 / 1e6, 3),
                "busbw_mbit": round(self.busbw * 8 / 1e6, 3)}


@dataclass(frozen=True)
class Send:
    """One logical transfer over one or more connections (several: path selection, pathsel.py)."""
    src: Nic
    dst: Nic
    nbytes: int
    sports: tuple[int, ...] = (0,)       # one connection per source port (0: the kernel picks)
    dport: int | None = None
    message: int = 0                      # bytes per message when spreading over connections
    policy: str = "round-robin"           # or least-queued
    phase: int = 0
    rate: float = 0                       # bytes/s per connection, paced by the kernel (0: as fast as TCP goes)


class Runner:
    """Runs collectives on a running Emulation (see `run`)."""

    def __init__(self, emu, timeout: float = 120.0, pace: float = 0):
        self.emu = emu
        self.timeout = timeout
        self.pace = pace   # > 0: pace each connection at this fraction of its NIC's fair share
        self._lock = threading.Lock()
        self._next_port: dict[str, int] = defaultdict(lambda: SERVER_PORT_BASE)

    def _port(self, ip: str) -> int:
        with self._lock:
            port = self._next_port[ip]
            self._next_port[ip] = port + 1 if port < 60000 else SERVER_PORT_BASE
            return port

    def _spawn(self, host: str, spec: dict) -> subprocess.Popen:
        import sys
        return self.emu.net[host].spawn(
            [sys.executable, "-I", "-S", "-c", AGENT, AGENT_MARKER, json.dumps(spec)],
            AGENT_MARKER, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)

    def run_sends(self, sends: list[Send]) -> tuple[float, list[tuple[Send, int, float, list[int], int]]]:
        """Run `sends` at once: (phase seconds, [(send, dport, seconds, bytes per conn, received)])."""
        if not sends:
            return 0.0, []
        per_host: dict[str, dict] = defaultdict(lambda: {"listen": [], "send": [],
                                                         "timeout": self.timeout})
        ports = []
        for i, s in enumerate(sends):
            port = s.dport or self._port(s.dst.ip)
            ports.append(port)
            per_host[s.dst.host]["listen"].append([s.dst.ip, port, len(s.sports), i])
            per_host[s.src.host]["send"].append(
                [i, {"conns": [[s.src.ip, sp or 0, s.dst.ip, port] for sp in s.sports],
                     "bytes": s.nbytes, "message": s.message, "policy": s.policy, "rate": s.rate}])
        agents: dict[str, subprocess.Popen] = {}
        try:
            for host, spec in per_host.items():
                agents[host] = self._spawn(host, spec)
            for host, proc in agents.items():
                line = proc.stdout.readline()
                if line.strip() != "ready":
                    raise TestbedError(f"transfer agent on {host} did not start: "
                                       f"{line}{proc.stderr.read()[-1500:]}")
            t_go = time.monotonic()
            for proc in agents.values():
                proc.stdin.write("go\n")
                proc.stdin.flush()
            outputs = {}
            for host, proc in agents.items():
                try:
                    text, err = proc.communicate(timeout=max(1.0, t_go + self.timeout + 5 - time.monotonic()))
                except subprocess.TimeoutExpired:
                    raise TestbedError(f"transfers did not finish within {self.timeout:.0f} s")
                try:
                    outputs[host] = json.loads(text.strip().splitlines()[-1])
                except (ValueError, IndexError):
                    raise TestbedError(f"transfer agent on {host} failed: {err[-1500:]}")
                if outputs[host]["err"]:
                    raise TestbedError(f"transfer agent on {host}: {outputs[host]['err'][:3]}")
            done = {i: (t1 - t_go, per_conn) for out in outputs.values() for i, _t0, t1, per_conn in out["send"]}
            received = defaultdict(int)
            for out in outputs.values():
                for i, n, _f, _l in out["recv"]:
                    received[i] += n
            if len(done) < len(sends):
                raise TestbedError(f"{len(sends) - len(done)} transfers did not complete")
            elapsed = max(t for t, _ in done.values())
            return elapsed, [(s, ports[i], done[i][0], done[i][1], received[i]) for i, s in enumerate(sends)]
        finally:
            for proc in agents.values():
                if proc.poll() is None:
                    proc.kill()
                proc.wait()

    def fair_rate(self, transfers: list[Transfer], t: Transfer) -> float:
        """Bytes/s for `t` when its NIC's line rate is shared by the NIC's transfers in the phase."""
        sharing = sum(1 for u in transfers if u.src == t.src and u.src.host != u.dst.host)
        return self.pace * self.emu.fabric.line_mbit(t.src) * 1e6 / 8 / max(sharing, 1)

    def run_phase(self, transfers: list[Transfer]) -> tuple[float, list[FlowRecord]]:
        sends = [Send(t.src, t.dst, t.nbytes, (t.sport or 0,), t.dport, phase=t.phase,
                      rate=self.fair_rate(transfers, t) if self.pace else 0) for t in transfers]
        elapsed, rows = self.run_sends(sends)
        return elapsed, [FlowRecord(s.src.name, s.dst.name, s.phase, s.nbytes, received,
                                    s.sports[0] or None, port, s.src.host == s.dst.host, seconds, per_conn)
                         for s, port, seconds, per_conn, received in rows]

    def run_one(self, coll: Collective) -> CollectiveRun:
        phase_seconds, flows = [], []
        for transfers in coll.phases():
            seconds, records = self.run_phase(transfers)
            phase_seconds.append(seconds)
            flows += records
        # completion = the sum of the phases (each from "go" to its last byte read), without
        # the agents' start-up between phases
        return CollectiveRun(coll.job, coll.kind, coll.size, coll.ranks, sum(phase_seconds),
                             phase_seconds, flows)

    def run(self, collectives: list[Collective]) -> list[CollectiveRun]:
        """Each collective (job) in its own thread, all at once; each job's phases in sequence."""
        if len(collectives) == 1:
            return [self.run_one(collectives[0])]
        results: list = [None] * len(collectives)

        def work(i, coll):
            try:
                results[i] = self.run_one(coll)
            except BaseException as e:   # re-raised in the caller's thread
                results[i] = e
        threads = [threading.Thread(target=work, args=(i, c)) for i, c in enumerate(collectives)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        for r in results:
            if isinstance(r, BaseException):
                raise r
        return results


def run(emu, collectives, timeout: float = 120.0, pace: float = 0) -> list[CollectiveRun]:
    """Run one collective or several concurrent ones (jobs) on a running Emulation.

    pace > 0 paces every connection at that fraction of its NIC's fair share of line rate, a
    stand-in for the credit-based flow control of a lossless fabric (InfiniBand, RoCE with PFC):
    without it, TCP's loss recovery under incast dominates completion times at these rates.
    """
    if isinstance(collectives, Collective):
        collectives = [collectives]
    return Runner(emu, timeout, pace).run(list(collectives))


def host_port_counters(emu) -> dict[str, tuple[int, int]]:
    """Switch ports facing hosts (root namespace): intf -> (tx_bytes, tx_packets): what the
    fabric delivered to hosts."""
    out = {}
    for l in emu.fabric.host_links():
        base = f"/sys/class/net/{l.b_intf}/statistics"
        out[l.b_intf] = (int(open(f"{base}/tx_bytes").read()), int(open(f"{base}/tx_packets").read()))
    return out


HEADER_BYTES = 14 + 20 + 32   # Ethernet + IPv4 + TCP with timestamps: what a data-less segment costs


def delivered_payload(before: dict, after: dict) -> int:
    """TCP payload bytes the fabric delivered to hosts between two host_port_counters readings:
    wire bytes less one header per packet (ACKs are all header)."""
    total = 0
    for intf, (b1, p1) in after.items():
        b0, p0 = before.get(intf, (0, 0))
        total += (b1 - b0) - HEADER_BYTES * (p1 - p0)
    return total


__all__ = ["Transfer", "Collective", "ring_allreduce", "reduce_scatter", "all_gather", "all_to_all",
           "moe_all_to_all", "moe_bytes_per_token", "pipeline", "busbw_factor", "algbw", "run",
           "CollectiveRun", "FlowRecord", "Send", "Runner", "host_port_counters", "delivered_payload"]
