"""Send raw frames from the ports of many hosts at once: one process, fed on standard input.

    python -m testbed.inhost.frames < LINES      (as root, in the root namespace)

Each line is `PID PORT HEXFRAME`: the frame leaves on PORT of the host whose network namespace PID
holds (PID 0: the root namespace, e.g. a switch port's own interface). One process, so a thousand
frames cost one interpreter start and nothing on a command line grows with the fabric; its
threads enter the hosts' namespaces (setns moves only the calling thread), a host at a time
each, so the ~10 ms the kernel takes to close each host's packet socket (an RCU grace period)
passes for many hosts at once instead of one after another. What is sent (a NIC's gratuitous
ARP, a wiring probe) is built by the caller. Standard library only: it starts fast.
"""
from __future__ import annotations

import ctypes
import os
import socket
import sys
import threading

CLONE_NEWNET = 0x40000000


def enter_netns(pid: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into the namespace of {pid}")
    finally:
        os.close(fd)


def send_all(frames: list[tuple[str, bytes]]) -> int:
    """Send each (port, frame) in the current namespace; returns how many failed. One socket
    for all of them: closing a packet socket waits for the kernel (~10 ms each)."""
    failed = 0
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        for port, frame in frames:
            try:
                s.sendto(frame, (port, 0))
            except OSError as e:   # a port that is down cannot send: say so and go on
                print(f"frames: {port}: {e}", file=sys.stderr)
                failed += 1
    return failed


WORKERS = 16


def send_from(pid: int, frames: list[tuple[str, bytes]]) -> int:
    """Send `frames` from the namespace of `pid` (0: this one), in the calling thread."""
    if pid:
        enter_netns(pid)
    return send_all(frames)


def main(lines) -> int:
    by_host: dict[int, list[tuple[str, bytes]]] = {}
    for line in lines:
        if line.strip():
            pid, port, frame = line.split()
            by_host.setdefault(int(pid), []).append((port, bytes.fromhex(frame)))
    failed = [send_all(by_host.pop(0, []))]    # the root namespace's, from the main thread
    hosts = sorted(by_host.items())

    def work(share):   # a thread's share of the hosts (list.append is atomic)
        failed.append(sum(send_from(pid, frames) for pid, frames in share))
    threads = [threading.Thread(target=work, args=(hosts[i::WORKERS],)) for i in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return 1 if sum(failed) else 0


if __name__ == "__main__":
    sys.exit(main(sys.stdin))
