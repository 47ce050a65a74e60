"""Send gratuitous ARPs: `python -m testbed.emulation.garp PORT:IP:MAC ...` (run inside a host namespace).

A NIC announces itself on each of its ports so that each ToR it is cabled to tells the
controller where it lives. Standard library only: it starts fast in every host.
"""
from __future__ import annotations

import socket
import sys

ETH_P_ARP = 0x0806


def garp_frame(ip: str, mac: str) -> bytes:
    hw = bytes.fromhex(mac.replace(":", ""))
    addr = socket.inet_aton(ip)
    eth = b"\xff" * 6 + hw + ETH_P_ARP.to_bytes(2, "big")
    # htype 1 (Ethernet), ptype IPv4, hlen 6, plen 4, op 1 (request); sender and target IP alike
    arp = bytes.fromhex("0001080006040001") + hw + addr + b"\x00" * 6 + addr
    return eth + arp


def announce(port: str, ip: str, mac: str) -> None:
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((port, 0))
        s.send(garp_frame(ip, mac))


def main(argv: list[str]) -> int:
    failed = 0
    for item in argv:
        port, ip, mac = item.split(":", 2)
        try:
            announce(port, ip, mac)
        except OSError as e:   # a port that is down cannot send: say so and go on
            print(f"garp: {port}: {e}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
