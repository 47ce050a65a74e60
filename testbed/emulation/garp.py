"""Send gratuitous ARPs for many hosts at once: one process, fed on standard input.

    python -m testbed.emulation.garp < LINES      (as root, in the root namespace)

Each line is `PID PORT IP MAC`: a NIC announces itself on PORT of the host whose network
namespace PID holds, so that the ToR at the other end tells the controller where it lives.
One process enters each host's namespace in turn (setns), so announcing a thousand NIC ports
costs one interpreter start, and nothing on a command line grows with the fabric. Standard
library only: it starts fast.
"""
from __future__ import annotations

import ctypes
import os
import socket
import sys

ETH_P_ARP = 0x0806
CLONE_NEWNET = 0x40000000


def garp_frame(ip: str, mac: str) -> bytes:
    hw = bytes.fromhex(mac.replace(":", ""))
    addr = socket.inet_aton(ip)
    eth = b"\xff" * 6 + hw + ETH_P_ARP.to_bytes(2, "big")
    # htype 1 (Ethernet), ptype IPv4, hlen 6, plen 4, op 1 (request); sender and target IP alike
    arp = bytes.fromhex("0001080006040001") + hw + addr + b"\x00" * 6 + addr
    return eth + arp


def enter_netns(pid: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into the namespace of {pid}")
    finally:
        os.close(fd)


def announce(port: str, ip: str, mac: str) -> None:
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:   # bound in the current netns
        s.bind((port, 0))
        s.send(garp_frame(ip, mac))


def main(lines) -> int:
    by_host: dict[int, list[tuple[str, str, str]]] = {}
    for line in lines:
        if line.strip():
            pid, port, ip, mac = line.split()
            by_host.setdefault(int(pid), []).append((port, ip, mac))
    failed = 0
    for pid, ports in by_host.items():
        enter_netns(pid)
        for port, ip, mac in ports:
            try:
                announce(port, ip, mac)
            except OSError as e:   # a port that is down cannot send: say so and go on
                print(f"garp: {port}: {e}", file=sys.stderr)
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.stdin))
