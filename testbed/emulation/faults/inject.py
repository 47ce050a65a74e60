"""Fault injection on a running emulation; every fault is undone on exit, whatever happens.

    with Faults(emu) as faults:
        cut = faults.link_down(link)      # both ends lose carrier; the switch sees port status
        faults.one_way(link, "up")        # host -> ToR dropped, ToR -> host fine, carrier stays up
        faults.switch_down("p0s0r0t0")    # every port of a switch
        cut.repair()                      # one fault undone now; the rest on exit

Each fault returns a Handle whose `repair()` undoes that fault alone; `faults.in_place` lists the
handles not yet repaired, most recent last. The kinds of fault the shell and experiment files
name are declared in testbed/emulation/faults/kinds.py on top of these primitives.

One-direction faults drop on the *sending* side: an nftables netdev egress hook where the kernel
has it (an ingress hook does not affect ports OVS reads in userspace), else tc matchall drop.
"""
from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from testbed.core import sh
from testbed.core.errors import ParamError, TestbedError
from testbed.core.wait import sleep_until
from testbed.emulation.net import system
from testbed.model.fabric import Link

if TYPE_CHECKING:
    from testbed.emulation.build import Emulation

_TABLE_NUMBERS = itertools.count(1)


class Handle:
    """One fault put in place: `note` says what it is, `repair()` undoes it (once; a second call,
    or one after `repair_all`, does nothing). `key` names what it holds down, so that link_up and
    switch_up find it."""

    def __init__(self, faults: Faults | None, note: str, undo: Callable[[], None] | None = None,
                 key: tuple = ()):
        self.faults, self.note, self._undo, self.key = faults, note, undo, key

    @property
    def in_place(self) -> bool:
        return self.faults is not None and self in self.faults.in_place

    def repair(self) -> None:
        if self.in_place:
            self.faults.in_place.remove(self)
            self._undo()

    def __repr__(self) -> str:
        return f"<fault {self.note}{'' if self.in_place else ' (repaired)'}>"


def ended(note: str) -> Handle:
    """The handle of a fault that undid itself before its inject returned (a flap train)."""
    return Handle(None, note)


class Faults:
    """Faults on a running Emulation, each undone when the block ends (or by its Handle's
    repair()): `with Faults(emu) as f: f.link_down(f.link("p0s0h0-n0p0"))`; link_down/up,
    flap_train, one_way, switch_down/up."""

    def __init__(self, emu: Emulation):
        self.emu = emu
        self.in_place: list[Handle] = []    # most recent last

    def __enter__(self) -> Faults:
        return self

    def __exit__(self, *exc) -> None:
        self.repair_all()

    def add(self, note: str, undo: Callable[[], None], key: tuple = ()) -> Handle:
        """Record a fault just put in place and how to undo it: its Handle."""
        handle = Handle(self, note, undo, key)
        self.in_place.append(handle)
        return handle

    def combined(self, note: str, handles: list[Handle]) -> Handle:
        """One handle for several faults just made (a kind built of others): `fault list` shows
        one line, and its repair undoes them all, the last made first."""
        for handle in handles:
            self.in_place.remove(handle)
        return self.add(note, lambda: [h._undo() for h in reversed(handles)])

    def holding(self, key: tuple) -> list[Handle]:
        return [h for h in self.in_place if key and h.key == key]

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
    def link_down(self, link: Link) -> Handle:
        self._set([link], "down")
        return self.add(f"{link.b_intf} down (its peer {link.a_intf} lost carrier)",
                        lambda: self._set([link], "up"), key=("link", link.b_intf))

    def link_up(self, link: Link) -> None:
        """Bring `link` up, and forget the link_down faults on it."""
        self._set([link], "up")
        self.in_place = [h for h in self.in_place if h.key != ("link", link.b_intf)]

    def flap_train(self, link: Link, count: int, period: float, down_time: float) -> list[float]:
        """`count` flaps, one every `period` s, each down for `down_time` s; returns flap times.
        Stopped part way (Ctrl-C, an error), it leaves the link up, as a finished train does."""
        if down_time >= period:
            raise ParamError(f"down_time={down_time} must be shorter than period={period}")
        times = []
        start = time.monotonic()
        try:
            for i in range(count):
                sleep_until(start + i * period)
                times.append(time.monotonic() - start)
                self.link_down(link)
                sleep_until(start + i * period + down_time)   # the fault's own schedule, not a readiness wait
                self.link_up(link)
        except BaseException:
            self.link_up(link)
            raise
        return times

    # ---- one-direction fault ----
    def one_way(self, link: Link, direction: str) -> Handle:
        """Drop traffic in one direction only: 'up' (a -> b, e.g. NIC -> ToR) or 'down' (b -> a)."""
        if direction not in ("up", "down"):
            raise ParamError(f"direction={direction!r}: choose up (a -> b) or down (b -> a)")
        owner, intf = (link.a, link.a_intf) if direction == "up" else (link.b, link.b_intf)
        dropped = f"{link.a} -> {link.b}" if direction == "up" else f"{link.b} -> {link.a}"
        note = f"{link.a_intf} <-> {link.b_intf}: {dropped} dropped, carrier up"
        backend = system.one_way_fault_backend()
        if backend == "nft-egress":
            table = f"hpn_{self.emu.run_id.replace('-', '_')}_{next(_TABLE_NUMBERS)}"
            rules = (f"table netdev {table} {{ chain oneway {{ type filter hook egress device "
                     f"\"{intf}\" priority 0; drop; }}; }}")
            self._run(owner, f"nft -f - <<'EOF'\n{rules}\nEOF")
            if owner in self.emu.fabric.switches:   # root namespace: `clean` must know it
                self.emu.state.add("nft_tables", f"netdev {table}")
            return self.add(note, lambda: self._run(owner, f"nft delete table netdev {table}"))
        if backend == "tc-drop":
            self._run(owner, f"tc qdisc add dev {intf} clsact && "
                             f"tc filter add dev {intf} egress matchall action drop")
            return self.add(note, lambda: self._run(owner, f"tc qdisc del dev {intf} clsact"))
        raise TestbedError("this kernel has neither an nftables egress hook nor tc drop actions")

    # ---- a whole switch ----
    def switch_down(self, switch: str) -> Handle:
        links = [l for l in self.emu.fabric.links if switch in (l.a, l.b)]
        self._set(links, "down", near=switch)
        return self.add(f"switch {switch} down (every port)",
                        lambda: self._set(links, "up", near=switch), key=("switch", switch))

    def switch_up(self, switch: str) -> None:
        """Undo switch_down(switch) now."""
        for handle in self.holding(("switch", switch)):
            handle.repair()

    def repair_all(self) -> None:
        """Undo every fault still in place, most recent first; go on past failures."""
        errors = []
        while self.in_place:
            handle = self.in_place[-1]
            try:
                handle.repair()
            except Exception as e:  # noqa: BLE001 -- keep repairing the rest
                errors.append(f"{handle.note}: {e}")
        if errors:
            raise TestbedError("could not undo: " + "; ".join(errors))
