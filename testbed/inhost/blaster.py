"""Paced UDP flows from many hosts at once: one process, one loop, fed on standard input.

    python -I -m testbed.inhost.blaster SECONDS SIZE < LINES      (as root, in the root namespace)

Lines, then a line `go`:
- `listen PID IP PORT`: a socket in the namespace PID holds that takes the datagrams sent to
  IP:PORT (and drops them once its small buffer is full), so that no ICMP error answers them;
- `flow PID SRC SPORT DST DPORT RATE`: send SIZE-byte datagrams from SRC:SPORT to DST:DPORT at
  RATE bytes/s, from the namespace PID holds; the host's routing picks the port, as for any
  socket, so a port that loses carrier hands its flows to the NIC's other port.
Every socket is opened first (entering each namespace in turn, as frames.py does), then the line
`ready` is printed, then one loop sends every flow's datagrams on one timetable for SECONDS: a
thousand flows cost one process and no thread each, where one TCP connection per thread does not
scale on two cores. Sockets are non-blocking with a small send buffer: a datagram the port has no
room for is dropped at the sender (counted), as a NIC's queue would, and no long queue builds up.
At the end one JSON line: the datagrams each flow sent and dropped. Standard library only.
"""
from __future__ import annotations

import heapq
import json
import signal
import socket
import sys
import time

from testbed.inhost.frames import enter_netns

SNDBUF = 16 * 1024      # a few datagrams: enough to keep a shaped port busy, not a long queue
RCVBUF = 4 * 1024


def open_sockets(lines) -> tuple[list, list]:
    """The listening sockets and the flows (socket, destination, period) the lines ask for,
    each socket opened in its host's namespace. Returns (listeners, flows)."""
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
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
                s.bind((words[2], int(words[3])))
                listeners.append(s)
            else:
                _, _, src, sport, dst, dport, rate = words
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SNDBUF)
                s.bind((src, int(sport)))
                flows.append((s, (dst, int(dport)), float(rate)))
    return listeners, flows


def blast(flows, seconds: float, size: int) -> tuple[list[int], list[int]]:
    """Send each flow's datagrams at its rate for `seconds`; (sent, dropped) per flow. Flows
    start spread over one period so that the datagrams do not leave in bursts."""
    payload = bytes(size)
    periods = [size / rate for _, _, rate in flows]
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
            time.sleep(due - now)
        sock, dest, _ = flows[i]
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
    _listeners, flows = open_sockets(lines)
    print("ready", flush=True)
    sent, dropped = blast(flows, seconds, size)
    print(json.dumps({"sent": sent, "dropped": dropped}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], sys.stdin))
