"""Link shaping as tc lines: each cable's egress capped at its emulated rate (HTB) over a
byte-limited queue (bfifo), at both ends. Pure: the emulation runs the lines where the ends are."""
from __future__ import annotations


def _cap(intf: str, mbit: float) -> str:
    return f"dev {intf} parent 5: classid 5:1 htb rate {mbit:.4f}mbit burst 15k"


def shaping_lines(intf: str, mbit: float, queue_bytes: int) -> list[str]:
    """tc commands (without `tc`) that cap `intf`'s egress at `mbit` with a byte-limited queue."""
    return [f"qdisc replace dev {intf} root handle 5: htb default 1",
            f"class add {_cap(intf, mbit)}",
            f"qdisc add dev {intf} parent 5:1 handle 10: bfifo limit {queue_bytes}"]


def rate_lines(intf: str, mbit: float) -> list[str]:
    """tc commands that change the cap `shaping_lines` set on `intf` to `mbit`, queue kept."""
    return [f"class change {_cap(intf, mbit)}"]


def ends_lines(fabric, links, lines_of) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """`lines_of(intf, mbit)` for both ends of each link, at the link's rate: (switch -> lines,
    host -> lines)."""
    on_switches: dict[str, list[str]] = {}
    on_hosts: dict[str, list[str]] = {}
    for link in links:
        mbit = fabric.link_mbit(link)
        for node, intf in ((link.a, link.a_intf), (link.b, link.b_intf)):
            ends = on_switches if node in fabric.switches else on_hosts
            ends.setdefault(node, []).extend(lines_of(intf, mbit))
    return on_switches, on_hosts
