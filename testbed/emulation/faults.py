"""Fault injection on a running emulation; every fault is undone on exit, whatever happens.

    with Faults(emu) as faults:
        faults.link_down(link)           # both ends lose carrier; the switch sees port status
        faults.one_way(link, "up")        # host -> ToR dropped, ToR -> host fine, carrier stays up
        faults.switch_down("p0s0r0t0")   # every port of a switch

One-direction faults drop on the *sending* side: an nftables netdev egress hook where the kernel
has it (an ingress hook does not affect ports OVS reads in userspace), else tc matchall drop.
"""
from __future__ import annotations

import itertools
import time

from testbed.core import sh
from testbed.core.errors import ParamError, TestbedError
from testbed.core.wait import sleep_until
from testbed.emulation import system
from testbed.emulation.build import Emulation
from testbed.model.fabric import Link

_TABLE_NUMBERS = itertools.count(1)


class Faults:
    def __init__(self, emu: Emulation):
        self.emu = emu
        self.undo: list[tuple[str, object]] = []   # (description, callable), most recent last

    def __enter__(self) -> "Faults":
        return self

    def __exit__(self, *exc) -> None:
        self.repair_all()

    # ---- where an interface lives ----
    def _run(self, intf_owner: str, script: str) -> None:
        """Run in the namespace of a node (host name) or in the root namespace (switch name)."""
        if intf_owner in self.emu.fabric.switches:
            self.emu.site.switch_run(intf_owner, script)
        else:
            sh.node_cmd(self.emu.net[intf_owner], script)

    def _set(self, links: list[Link], state: str, near: str | None = None) -> None:
        """Set `links` down or up at their end on switch `near` (default: the b end, a switch on
        every link); a veth peer follows by itself, the far end of a cut link between servers
        (VXLAN) does not, so it is set too. Other ends stay as they are: overlapping faults
        (two neighbouring switches down, one brought back) do not undo each other."""
        lines: dict[str, list[str]] = {}
        for l in links:
            ends = [(l.a, l.a_intf), (l.b, l.b_intf)]
            if l.a != near:
                ends.reverse()            # the near end first
            (node, intf), (far, far_intf) = ends
            lines.setdefault(node, []).append(f"link set {intf} {state}")
            if far in self.emu.fabric.switches and not self.emu.site.carrier_follows(l):
                lines.setdefault(far, []).append(f"link set {far_intf} {state}")
        self.emu.site.switches_batch("ip -batch -", lines)

    def link(self, a: str, b: str | None = None) -> Link:
        """A link by one of its interface names, or by its two end nodes."""
        for l in self.emu.fabric.links:
            if a in (l.a_intf, l.b_intf) and b is None:
                return l
            if {a, b} == {l.a, l.b}:
                return l
        raise ParamError(f"no link {a}{' - ' + b if b else ''} in this fabric")

    # ---- link down / up ----
    def link_down(self, link: Link) -> None:
        self._set([link], "down")
        self.undo.append((f"link {link.b_intf} up", lambda: self._up(link)))

    def link_up(self, link: Link) -> None:
        self._up(link)
        self.undo = [(d, f) for d, f in self.undo if d != f"link {link.b_intf} up"]

    def _up(self, link: Link) -> None:
        self._set([link], "up")

    def flap_train(self, link: Link, count: int, period: float, down_time: float) -> list[float]:
        """`count` flaps, one every `period` s, each down for `down_time` s; returns flap times."""
        if down_time >= period:
            raise ParamError(f"down_time={down_time} must be shorter than period={period}")
        times = []
        start = time.monotonic()
        for i in range(count):
            sleep_until(start + i * period)
            times.append(time.monotonic() - start)
            self.link_down(link)
            sleep_until(start + i * period + down_time)   # the fault's own schedule, not a readiness wait
            self.link_up(link)
        return times

    # ---- one-direction fault ----
    def one_way(self, link: Link, direction: str) -> None:
        """Drop traffic in one direction only: 'up' (a -> b, e.g. NIC -> ToR) or 'down' (b -> a)."""
        if direction not in ("up", "down"):
            raise ParamError(f"direction={direction!r}: choose up (a -> b) or down (b -> a)")
        owner, intf = (link.a, link.a_intf) if direction == "up" else (link.b, link.b_intf)
        backend = system.one_way_fault_backend()
        if backend == "nft-egress":
            table = f"hpn_{self.emu.run_id.replace('-', '_')}_{next(_TABLE_NUMBERS)}"
            rules = (f"table netdev {table} {{ chain oneway {{ type filter hook egress device "
                     f"\"{intf}\" priority 0; drop; }}; }}")
            self._run(owner, f"nft -f - <<'EOF'\n{rules}\nEOF")
            if owner in self.emu.fabric.switches:   # root namespace: `clean` must know it
                self.emu.state.add("nft_tables", f"netdev {table}")
            self.undo.append((f"nft table {table}",
                              lambda: self._run(owner, f"nft delete table netdev {table}")))
        elif backend == "tc-drop":
            self._run(owner, f"tc qdisc add dev {intf} clsact && "
                             f"tc filter add dev {intf} egress matchall action drop")
            self.undo.append((f"clsact on {intf}",
                              lambda: self._run(owner, f"tc qdisc del dev {intf} clsact")))
        else:
            raise TestbedError("this kernel has neither an nftables egress hook nor tc drop actions")

    # ---- a whole switch ----
    def switch_down(self, switch: str) -> list[Link]:
        links = [l for l in self.emu.fabric.links if switch in (l.a, l.b)]
        self._set(links, "down", near=switch)
        self.undo.append((f"switch {switch} up", lambda: self._set(links, "up", near=switch)))
        return links

    def switch_up(self, switch: str) -> None:
        """Undo switch_down(switch) now."""
        for description, action in [u for u in self.undo if u[0] == f"switch {switch} up"]:
            action()
            self.undo.remove((description, action))

    def repair_all(self) -> None:
        """Undo every fault still in place, most recent first; go on past failures."""
        errors = []
        while self.undo:
            description, action = self.undo.pop()
            try:
                action()
            except Exception as e:   # keep repairing the rest
                errors.append(f"{description}: {e}")
        if errors:
            raise TestbedError("could not undo: " + "; ".join(errors))
