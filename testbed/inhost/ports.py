"""Reading this machine's ports: interface statistics counters (tx_bytes, rx_bytes, ...) from
sysfs and queue backlog (bytes in the link's bfifo) from netlink. What portstream.py runs on a
server, and what testbed.emulation.net.counters' Sampler reads here (it is a Ports)."""
from __future__ import annotations

from pathlib import Path

SYSFS = Path("/sys/class/net")


def read(intfs, names=("tx_bytes",)) -> dict[str, tuple[int, ...]]:
    """intf -> its counters `names`, in that order, for each root-namespace interface."""
    return {i: tuple(int((SYSFS / i / "statistics" / n).read_text()) for n in names)
            for i in intfs}


def counter(intf: str, name: str) -> int:
    """A root-namespace interface's statistics counter (tx_bytes, rx_bytes, rx_packets, ...)."""
    return read([intf], (name,))[intf][0]


def backlog(ipr, index: int) -> int:
    """Bytes queued under an interface's HTB class, i.e. in its bfifo (0 if it has none).

    Read from the interface's class dump, which the kernel answers for that one interface. (A
    qdisc dump answers with every qdisc of the namespace, filtered here: each read then cost as
    much as the fabric's ports, each sample the square of it; 15 ms a read among 100 shaped
    veths, against 0.2 ms.) Each shaped port has one HTB class, over its bfifo (shaping.py)."""
    total = 0
    for cls in ipr.get_classes(index=index):
        stats = cls.get_attr("TCA_STATS2")
        queue = stats.get_attr("TCA_STATS_QUEUE") if stats else None
        total += queue["backlog"] if queue else 0
    return total


class Ports:
    """One sample at a time of `intfs`: each interface's `counter` and, with `queues`, its backlog."""

    def __init__(self, intfs: list[str], counter: str = "tx_bytes", queues: bool = True):
        self.intfs, self.counter, self.queues = intfs, counter, queues

    def open(self) -> None:
        from pyroute2 import IPRoute  # netlink: the one library outside the standard one (__init__)
        self._ipr = IPRoute()
        self._index = {i: self._ipr.link_lookup(ifname=i)[0] for i in self.intfs}

    def read(self) -> dict[str, tuple[int, int]]:
        """One sample: each interface's (counter, backlog bytes)."""
        return {intf: (counter(intf, self.counter), backlog(self._ipr, index) if self.queues else 0)
                for intf, index in self._index.items()}

    def close(self) -> None:
        self._ipr.close()
