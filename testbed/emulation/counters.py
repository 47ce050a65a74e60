"""Interface statistics counters (tx_bytes, tx_packets, rx_bytes, ...), read from sysfs.

Switch ports are veth ends in the root namespace, so this reads the emulation's switch side.
"""
from __future__ import annotations

from pathlib import Path

SYSFS = Path("/sys/class/net")


def read(intfs, names=("tx_bytes",)) -> dict[str, tuple[int, ...]]:
    """intf -> its counters `names`, in that order, for each root-namespace interface."""
    return {i: tuple(int((SYSFS / i / "statistics" / n).read_text()) for n in names)
            for i in intfs}
