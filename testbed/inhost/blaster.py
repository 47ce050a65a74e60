"""Paced UDP flows from many hosts at once: one process, one loop, fed on standard input.

    python -I -m testbed.inhost.blaster SECONDS SIZE < LINES      (as root, in the root namespace)

Lines, then a line `go`:
- `listen PID IP PORT`: a socket in the namespace PID holds that takes the datagrams sent to
  IP:PORT (and drops them once its small buffer is full), so that no ICMP error answers them;
  `listen PID IP PORT count`: the same, read by the loop between sends (with a larger buffer),
  counting each flow's datagrams as they arrive: what the fabric delivered, per flow;
- `flow PID SRC SPORT DST DPORT RATE`: send SIZE-byte datagrams from SRC:SPORT to DST:DPORT at
  RATE bytes/s, from the namespace PID holds; the host's routing picks the port, as for any
  socket, so a port that loses carrier hands its flows to the NIC's other port.
Every socket is opened first (entering each namespace in turn, as frames.py does), then the line
`ready` is printed, then one loop sends every flow's datagrams on one timetable for SECONDS: a
thousand flows cost one process and no thread each, where one TCP connection per thread does not
scale on two cores. Sockets are non-blocking with a small send buffer: a datagram the port has no
room for is dropped at the sender (counted), as a NIC's queue would, and no long queue builds up.
At the end one JSON line: the datagrams each flow sent and dropped, and (with a counting
listener) `received`, those each flow delivered, read until DRAIN s after the last send so that
what the fabric still queued arrives. Standard library only.
"""
from __future__ import annotations

import heapq
import json
import select
import signal
import socket
import sys
import time

from testbed.inhost.frames import enter_netns

SNDBUF = 16 * 1024      # a few datagrams: enough to keep a shaped port busy, not a long queue
RCVBUF = 4 * 1024
COUNT_RCVBUF = 1024 * 1024   # a counting listener is read between sends: room for a few ms
DRAIN = 0.5             # s after the last send: the queues of a few emulated hops have emptied


def open_sockets(lines) -> tuple[list, list]:
    """The listening sockets and the flows (socket, destination, rate, source) the lines ask
    for, each socket opened in its host's namespace. Returns (listeners, flows); a listener is
    (socket, counts): a counting one's datagrams by flow index go in the list `counts`."""
    wanted: dict[int, list[list[str]]] = {}
    for line in lines:
        words = line.split()
        if words == ["go"]:
            break
        if words:
            wanted.setdefault(int(words[1]), []).append(words)
    listeners, flows = [], []
    for pid, entries in sorted(wanted.items()):     # 0, the root namespace, first: before any setns
        if pid:
            enter_netns(pid)
        for words in entries:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setblocking(False)
            if words[0] == "listen":
                count = words[4:] == ["count"]
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, COUNT_RCVBUF if count else RCVBUF)
                s.bind((words[2], int(words[3])))
                listeners.append((s, count))
            else:
                _, _, src, sport, dst, dport, rate = words
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SNDBUF)
                s.bind((src, int(sport)))
                flows.append((s, (dst, int(dport)), float(rate), (src, int(sport))))
    return listeners, flows


class Counter:
    """Reads the counting listeners and counts each flow's datagrams (by its source address and
    the listener's own): what the fabric delivered."""

    def __init__(self, listeners, flows):
        self.socks = [s for s, count in listeners if count]
        index = {(src, dest): i for i, (_s, dest, _r, src) in enumerate(flows)}
        self.flow_of = {s: {src: i for (src, dest), i in index.items() if dest == s.getsockname()}
                        for s in self.socks}
        self.received = [0] * len(flows)
        self.buf = bytearray(65536)          # every datagram read into it: no allocation a read

    def wait(self, seconds: float) -> None:
        """Sleep `seconds`, reading whatever arrives meanwhile."""
        if not self.socks:
            time.sleep(seconds)
            return
        ready, _, _ = select.select(self.socks, [], [], seconds)
        for s in ready:
            self.read(s)

    def read(self, s) -> None:
        flow_of = self.flow_of[s]
        while True:
            try:
                _, src = s.recvfrom_into(self.buf)
            except BlockingIOError:
                return
            i = flow_of.get(src)
            if i is not None:
                self.received[i] += 1

    def drain(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while self.socks and time.monotonic() < end:
            self.wait(end - time.monotonic())


def blast(flows, seconds: float, size: int, counter: Counter) -> tuple[list[int], list[int]]:
    """Send each flow's datagrams at its rate for `seconds`; (sent, dropped) per flow. Flows
    start spread over one period so that the datagrams do not leave in bursts; `counter`
    reads the counting listeners while the loop waits."""
    payload = bytes(size)
    periods = [size / rate for _, _, rate, _ in flows]
    start = time.monotonic()
    end = start + seconds
    timetable = [(start + periods[i] * i / len(flows), i) for i in range(len(flows))]
    heapq.heapify(timetable)
    sent, dropped = [0] * len(flows), [0] * len(flows)
    while timetable:
        due, i = timetable[0]
        if due >= end:
            break
        now = time.monotonic()
        if due > now:
            counter.wait(due - now)       # returns early when a datagram arrives: look again
            continue
        sock, dest, _, _ = flows[i]
        try:
            sock.sendto(payload, dest)
            sent[i] += 1
        except OSError:     # no room (EAGAIN/ENOBUFS) or no route (every port of the NIC down)
            dropped[i] += 1
        # the next datagram one period on, but never a burst to catch up after a late wake-up
        heapq.heapreplace(timetable, (max(due + periods[i], now - periods[i]), i))
    return sent, dropped


def main(argv, lines) -> int:
    seconds, size = float(argv[0]), int(argv[1])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    listeners, flows = open_sockets(lines)
    counter = Counter(listeners, flows)
    print("ready", flush=True)
    sent, dropped = blast(flows, seconds, size, counter)
    out = {"sent": sent, "dropped": dropped}
    if counter.socks:
        counter.drain(DRAIN)
        out["received"] = counter.received
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], sys.stdin))
