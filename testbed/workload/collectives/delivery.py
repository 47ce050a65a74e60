"""What the fabric delivered to hosts, from the counters of the switch ports facing them."""
from __future__ import annotations

HEADER_BYTES = 14 + 20 + 32   # Ethernet + IPv4 + TCP with timestamps: what a data-less segment costs


def host_port_counters(emu) -> dict[str, tuple[int, int]]:
    """Switch ports facing hosts (root namespace): intf -> (tx_bytes, tx_packets): what the
    fabric delivered to hosts."""
    intfs = [l.b_intf for l in emu.fabric.host_links()]
    return emu.counters(intfs, ("tx_bytes", "tx_packets"))


def delivered_payload(before: dict, after: dict) -> int:
    """TCP payload bytes the fabric delivered to hosts between two host_port_counters readings:
    wire bytes less one header per packet (ACKs are all header)."""
    total = 0
    for intf, (b1, p1) in after.items():
        b0, p0 = before.get(intf, (0, 0))
        total += (b1 - b0) - HEADER_BYTES * (p1 - p0)
    return total


__all__ = ["host_port_counters", "delivered_payload"]
