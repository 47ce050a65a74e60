"""Gratuitous ARP: how a NIC announces itself on each of its ports, so that the ToR at the other
end tells the controller where it lives (sent by testbed.inhost.frames)."""
from __future__ import annotations

import socket

ETH_P_ARP = 0x0806


def garp_frame(ip: str, mac: str) -> bytes:
    hw = bytes.fromhex(mac.replace(":", ""))
    addr = socket.inet_aton(ip)
    eth = b"\xff" * 6 + hw + ETH_P_ARP.to_bytes(2, "big")
    # htype 1 (Ethernet), ptype IPv4, hlen 6, plen 4, op 1 (request); sender and target IP alike
    arp = bytes.fromhex("0001080006040001") + hw + addr + b"\x00" * 6 + addr
    return eth + arp
