"""End-to-end UDP path probes between many hosts at once: one process, fed on standard input.

    python -I -m testbed.inhost.prober SECONDS INTERVAL < LINES      (as root, in the root namespace)

Lines, then a line `go`:
- `listen PID IP PORT`: a socket in the namespace PID holds that takes the probes sent to IP:PORT;
- `probe NAME PID SRC SPORT DST DPORT`: every INTERVAL, one small datagram from SRC:SPORT to
  DST:DPORT, sent from the namespace PID holds. A 5-tuple is a path: ECMP hashes it the same way
  every time, so the probe crosses the links the same 5-tuple of a job's flow crosses.
Every socket is opened first (entering each namespace in turn, as frames.py does), then the line
`ready` is printed (with the monotonic clock of round 0), then one loop sends each probe's rounds
on one timetable, probes spread over the interval, and reads whatever arrived in between. A probe
carries its name's index and its round; the listeners, all in this process, note which rounds of
which probe came in. At the end one JSON line: the rounds each probe sent, the rounds received,
and how late the loop ever was. Standard library only: it starts fast in the root namespace.
"""
from __future__ import annotations

import heapq
import json
import select
import signal
import socket
import struct
import sys
import time

from testbed.inhost.frames import enter_netns

PAYLOAD = struct.Struct("!II")     # probe index, round
GRACE = 0.3                        # s the listeners keep reading after the last round


def open_sockets(lines) -> tuple[list, list, list[str]]:
    """(listening sockets, probes as (socket, destination), probe names), each socket opened in
    its host's namespace."""
    wanted: dict[int, list[list[str]]] = {}
    for line in lines:
        words = line.split()
        if words == ["go"]:
            break
        if words:
            pid = int(words[1]) if words[0] == "listen" else int(words[2])
            wanted.setdefault(pid, []).append(words)
    listeners, probes, names = [], [], []
    for pid, entries in sorted(wanted.items()):
        if pid:
            enter_netns(pid)
        for words in entries:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setblocking(False)
            if words[0] == "listen":
                s.bind((words[2], int(words[3])))
                listeners.append(s)
            else:
                _, name, _, src, sport, dst, dport = words
                s.bind((src, int(sport)))
                probes.append((s, (dst, int(dport))))
                names.append(name)
    return listeners, probes, names


def drain(listeners, timeout: float, received: list[set], due, delay: list[float]) -> None:
    """Read every probe that has arrived within `timeout` s; `due(index, round)` is when it was
    sent, so that each probe's longest delay is kept too."""
    ready, _, _ = select.select(listeners, [], [], max(timeout, 0.0))
    for s in ready:
        while True:
            try:
                data = s.recv(64)
            except BlockingIOError:
                break
            if len(data) >= PAYLOAD.size:
                index, rnd = PAYLOAD.unpack_from(data)
                if index < len(received):
                    received[index].add(rnd)
                    delay[index] = max(delay[index], time.monotonic() - due(index, rnd))


def run(listeners, probes, seconds: float, interval: float, start: float) -> dict:
    """Send every probe once per `interval` from `start` for `seconds`; what came back."""
    n = len(probes)
    rounds = round(seconds / interval)
    sent, received, delay = [0] * n, [set() for _ in range(n)], [0.0] * n

    def due(i: int, rnd: int) -> float:
        return start + interval * (rnd + i / max(n, 1))
    timetable = [(due(i, 0), 0, i) for i in range(n)]
    heapq.heapify(timetable)
    late = 0.0
    while timetable:
        when, rnd, i = heapq.heappop(timetable)
        drain(listeners, when - time.monotonic(), received, due, delay)
        late = max(late, time.monotonic() - when)
        sock, dest = probes[i]
        try:
            sock.sendto(PAYLOAD.pack(i, rnd), dest)
            sent[i] += 1
        except OSError:       # no route: the probe is lost, as on the wire
            pass
        if rnd + 1 < rounds:
            heapq.heappush(timetable, (due(i, rnd + 1), rnd + 1, i))
    end = time.monotonic() + GRACE
    while time.monotonic() < end:
        drain(listeners, end - time.monotonic(), received, due, delay)
    return {"rounds": rounds, "sent": sent, "received": [sorted(r) for r in received],
            "late_max_s": round(late, 4), "delay_max_s": [round(d, 4) for d in delay]}


def main(argv, lines) -> int:
    seconds, interval = float(argv[0]), float(argv[1])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    listeners, probes, names = open_sockets(lines)
    start = time.monotonic() + 0.05
    print(f"ready {start:.6f}", flush=True)
    out = run(listeners, probes, seconds, interval, start)
    print(json.dumps({"names": names, **out}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], sys.stdin))
