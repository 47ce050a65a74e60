"""The transfer agent: one process per host and phase that moves exactly the bytes it is told to.

    python -I -m testbed.inhost.agent SPEC     (the runner starts it without site: runner.AGENT)

SPEC (JSON): {"listen": [[ip, port, conns, idx], ...],      accept `conns` connections for idx
              "send": [[idx, {"conns": [[src, sport, dst, dport], ...], "bytes": n,
                              "message": m, "policy": "round-robin" | "least-queued",
                              "rate": bytes/s per connection (0: unpaced),
                              "inflight": queued bytes per connection (default 2 messages)}]],
              "timeout": seconds to wait for the receivers after the last send}

It listens on every address, prints "ready", waits for a line on stdin ("go"), sends, and once
the receivers have read everything prints one JSON line:
    {"recv": [[idx, bytes, first, last], ...]  one per accepted connection (monotonic times)
     "send": [[idx, t0, t1, bytes per connection], ...]
     "err": ["...", ...]}
A send ends when the receiver has read every byte: the receiver closes, the sender sees EOF.

Standard library only: it starts once per host and phase, so start-up must stay short.
"""
import collections
import fcntl
import json
import os
import socket
import struct
import sys
import threading
import time

MARKER = "testbed.inhost.agent"   # this module's name: `clean` finds agents by it
SIOCOUTQ = 0x5411             # bytes in a socket's send queue not yet acknowledged
SO_MAX_PACING_RATE = 47       # the kernel paces a TCP connection at this many bytes/s
CHUNK = 262144


def queued(sock: socket.socket) -> int:
    """Bytes the kernel holds for `sock` unacknowledged."""
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), SIOCOUTQ, b"\0\0\0\0"))[0]


def send_all(sock: socket.socket, total: int) -> None:
    buf = memoryview(b"\0" * CHUNK)     # slices of a view: no copy a call
    left = total
    while left:
        left -= sock.send(buf[:min(left, CHUNK)])


class Spreader:
    """Spreads `total` bytes in messages over several connections, one thread and queue per
    connection; `policy` picks each message's connection."""

    def __init__(self, socks: list, message: int, policy: str, inflight: int):
        self.socks, self.message, self.policy, self.limit = socks, message, policy, inflight
        self.queues = [collections.deque() for _ in socks]
        self.backlog = [0] * len(socks)          # bytes queued here, not yet handed to the kernel
        self.per_conn = [0] * len(socks)
        self.cv = threading.Condition()
        self.next = 0

    def run(self, total: int) -> list[int]:
        threads = [threading.Thread(target=self.drain, args=(k,)) for k in range(len(self.socks))]
        for t in threads:
            t.start()
        left = total
        while left:
            size = min(self.message, left)
            with self.cv:
                k = self.pick()
                self.queues[k].append(size)
                self.backlog[k] += size
                self.per_conn[k] += size
                self.cv.notify_all()
            left -= size
        with self.cv:
            for q in self.queues:
                q.append(None)            # no more messages
            self.cv.notify_all()
        for t in threads:
            t.join()
        return self.per_conn

    def pick(self) -> int:
        """The connection for the next message, waiting while it has `limit` bytes queued
        (called holding the condition)."""
        n = len(self.socks)
        if self.policy == "least-queued":
            # queued bytes = what waits in our queue + what the kernel holds unacked
            while True:
                load = [self.backlog[k] + queued(self.socks[k]) for k in range(n)]
                k = min(range(n), key=lambda k: (load[k], k))
                if self.backlog[k] < self.limit:
                    return k
                self.cv.wait(0.002)
        k = self.next % n                 # round-robin over the connections, as channels do
        self.next += 1
        while self.backlog[k] >= self.limit:
            self.cv.wait(0.002)
        return k

    def drain(self, k: int) -> None:
        data = b"\0" * self.message
        while True:
            with self.cv:
                while not self.queues[k]:
                    self.cv.wait()
                size = self.queues[k].popleft()
            if size is None:
                return
            view = memoryview(data)[:size]
            while view:
                view = view[self.socks[k].send(view):]
            with self.cv:
                self.backlog[k] -= size
                self.cv.notify_all()


def connect(conns: list, rate: float) -> list[socket.socket]:
    socks = []
    for src, sport, dst, dport in conns:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((src, sport))
        if rate:
            s.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, int(rate))
        s.connect((dst, dport))
        socks.append(s)
    return socks


class Agent:
    def __init__(self, spec: dict):
        self.spec = spec
        self.out = {"recv": [], "send": [], "err": []}
        self.lock = threading.Lock()
        self.readers: list[threading.Thread] = []
        self.servers: list[socket.socket] = []
        self.listeners: list[threading.Thread] = []

    def error(self, text: str) -> None:
        with self.lock:
            self.out["err"].append(text)

    def listen(self) -> None:
        """Bind and listen on every address now (before "ready"); accept in threads."""
        for ip, port, conns, idx in self.spec["listen"]:
            srv = socket.socket()
            srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            srv.bind((ip, port))
            srv.listen(64)
            self.servers.append(srv)
            self.listeners.append(threading.Thread(target=self.accept,
                                                   args=(srv, ip, port, conns, idx)))
        for t in self.listeners:
            t.start()

    def accept(self, srv: socket.socket, ip: str, port: int, conns: int, idx: int) -> None:
        try:
            for _ in range(conns):
                c, _addr = srv.accept()
                t = threading.Thread(target=self.read, args=(c, idx))
                t.start()
                with self.lock:
                    self.readers.append(t)
        except Exception as e:
            self.error(f"listen {ip}:{port:d} {e!r}")

    def read(self, conn: socket.socket, idx: int) -> None:
        """Count what `conn` delivers, read into one buffer: recv(n) would allocate and free an
        n-byte block a call (256 KB: the allocator's large-block path, page faults included) to
        keep a segment or two (bench/results/journal.md, 2026-12-03)."""
        n, first, buf = 0, None, bytearray(CHUNK)
        try:
            while True:
                got = conn.recv_into(buf)
                if not got:
                    break
                if first is None:
                    first = time.monotonic()
                n += got
        except Exception as e:
            self.error(f"recv {e!r}")
        last = time.monotonic()
        conn.close()
        with self.lock:
            self.out["recv"].append([idx, n, first, last])

    def send(self, idx: int, item: dict) -> None:
        try:
            socks = connect(item["conns"], item.get("rate"))
            t0 = time.monotonic()
            total, message = item["bytes"], item.get("message") or item["bytes"]
            if len(socks) == 1:
                send_all(socks[0], total)
                per_conn = [total]
            else:
                spreader = Spreader(socks, message, item["policy"], item.get("inflight", 2 * message))
                per_conn = spreader.run(total)
            for s in socks:
                s.shutdown(socket.SHUT_WR)
            for s in socks:    # the receiver closes once it has read everything
                while s.recv(65536):
                    pass
                s.close()
            with self.lock:
                self.out["send"].append([idx, t0, time.monotonic(), per_conn])
        except Exception as e:
            self.error(f"send {idx:d} {e!r}")

    def send_everything(self) -> None:
        senders = [threading.Thread(target=self.send, args=(idx, item))
                   for idx, item in self.spec["send"]]
        for t in senders:
            t.start()
        for t in senders:
            t.join()

    def wait_for_receivers(self) -> dict:
        deadline = time.monotonic() + float(self.spec.get("timeout", 120))
        for t in self.listeners:   # listeners first: once they are done, every reader exists
            t.join(max(0.0, deadline - time.monotonic()))
        with self.lock:
            readers = list(self.readers)
        for t in readers:
            t.join(max(0.0, deadline - time.monotonic()))
        return self.out


def main(argv: list[str] | None = None) -> None:
    agent = Agent(json.loads((sys.argv if argv is None else argv)[1]))
    agent.listen()
    print("ready", flush=True)
    sys.stdin.readline()
    agent.send_everything()
    print(json.dumps(agent.wait_for_receivers()), flush=True)
    sys.stderr.flush()
    os._exit(0)       # everything is said: no interpreter teardown (CPU inside the measured window)


if __name__ == "__main__":
    main()
