"""Send raw frames from the ports of many hosts at once: one process, fed on standard input.

    python -m testbed.inhost.frames < LINES      (as root, in the root namespace)

Each line is `PID PORT HEXFRAME`: the frame leaves on PORT of the host whose network namespace PID
holds (PID 0: the root namespace, e.g. a switch port's own interface). One process enters each
host's namespace in turn (setns), so a thousand frames cost one interpreter start, and nothing on a
command line grows with the fabric. What is sent (a NIC's gratuitous ARP, a wiring probe) is built
by the caller. Standard library only: it starts fast.
"""
from __future__ import annotations

import ctypes
import os
import socket
import sys

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


def main(lines) -> int:
    by_host: dict[int, list[tuple[str, bytes]]] = {}
    for line in lines:
        if line.strip():
            pid, port, frame = line.split()
            by_host.setdefault(int(pid), []).append((port, bytes.fromhex(frame)))
    failed = 0
    for pid, frames in sorted(by_host.items()):   # 0, the root namespace, first: before any setns
        if pid:
            enter_netns(pid)
        failed += send_all(frames)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.stdin))
