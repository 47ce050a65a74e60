"""The `impair` fault kind: delay, jitter, loss and a rate cap on one port's sending side, as
containerlab's `tools netem` sets them (the text and the refusals: testbed/emulation/net/impair.py).

    fault impair p0s0r0t0-eth3 --loss 2% --rate 100mbit          # the shell (`up --cli`)
    [[fault]] kind = "impair", port = "p0s0h0-n0p0", delay = "5ms", at = 2, for = 5   # a file
    impair(faults, "p0s0h0-n0p0", loss="20%")                     # Python: a Handle to repair
    hpn-testbed link impair PORT --loss 20%                       # another process (testbed/cli/link.py)

One port's egress, as `tools netem` does: impair both ends of a cable for both directions. An
nftables table made in the root namespace (a switch's port) is recorded in the run state before
it exists, so the teardown and `clean` remove it; everything else lives on the port and goes
with it, or with the repair.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from testbed.core.errors import ParamError
from testbed.emulation.faults.kinds import PORT, Arg, ArgProblem, FaultKind
from testbed.emulation.net import impair as text
from testbed.emulation.net import system

if TYPE_CHECKING:
    from testbed.emulation.faults.inject import Faults, Handle


@dataclass(frozen=True)
class Port:
    """A port of a fabric: the node it belongs to, whether that is a switch (root namespace), and
    the rate bring-up gave its cable (Mbit/s, what a clear puts back)."""
    node: str
    intf: str
    on_switch: bool
    link_mbit: float


def port_of(fabric, name: str) -> Port:
    for link in fabric.links:
        for node, intf in ((link.a, link.a_intf), (link.b, link.b_intf)):
            if intf == name:
                return Port(node, intf, node in fabric.switches, fabric.link_mbit(link))
    raise ParamError(f"no port {name!r} in this {fabric.family} fabric "
                     "(a host port such as HOST-n0p0, or SWITCH-ethN)")


def machine() -> dict[str, bool]:
    """What this kernel offers an impairment: netem, htb, nft_egress."""
    feats = system.features()
    return {"netem": feats["netem"], "htb": feats["htb"], "nft_egress": feats["nft_egress_hook"]}


def check(imp: text.Impairment) -> None:
    """Refuse (ImpairProblem, one line) what this machine cannot set."""
    problem = text.refusal(imp, **machine())
    if problem:
        raise problem


def set_on(port: Port, imp: text.Impairment, run_id: str, queue_bytes: int,
           run: Callable[[str], object], record: Callable[[str], None]) -> None:
    """Set `imp` on `port` with `run` (a script where the port lives); a table the root namespace
    will hold goes to `record` first."""
    check(imp)
    netem = machine()["netem"]
    table = text.table_name(run_id, port.intf)
    if port.on_switch and text.uses_table(imp, netem):
        record(f"netdev {table}")
    run(text.apply_script(imp, port.intf, table, netem, port.link_mbit, queue_bytes))


def clear_on(port: Port, run_id: str, queue_bytes: int, run: Callable[[str], object]) -> None:
    """`port` back as bring-up shaped it."""
    run(text.clear_script(port.intf, text.table_name(run_id, port.intf), port.link_mbit, queue_bytes))


def impair(faults: Faults, port: str, delay="", jitter="", loss="", rate="") -> Handle:
    """Impair `port`'s sending side on `faults`' running fabric; the Handle's repair clears it.
    Impairing a port again replaces what it had (the earlier handle is dropped)."""
    imp = _read(delay=delay, jitter=jitter, loss=loss, rate=rate)
    emu, where = faults.emu, port_of(faults.emu.fabric, port)
    q = emu.options.queue_bytes

    def run(script: str) -> None:
        faults._run(where.node, script)
    set_on(where, imp, emu.run_id, q, run, lambda table: emu.state.add("nft_tables", table))
    faults.in_place = [h for h in faults.in_place if h.key != ("impair", port)]
    return faults.add(f"{port} sends with {imp.describe()}",
                      lambda: clear_on(where, emu.run_id, q, run), key=("impair", port))


def _read(**words) -> text.Impairment:
    try:
        return text.parse(**words)
    except text.ImpairProblem as e:
        raise ArgProblem(e.key, e.problem) from None


class Impair(FaultKind):
    name = "impair"
    help = "delay, jitter, loss or a rate cap on a port's sending side (netem; without it loss and rate)"
    args = (Arg("port", PORT, "the port whose sending side is impaired, e.g. p0s0r0t0-eth3",
                positional=True),
            Arg("delay", str, "added delay, e.g. 5ms (needs netem)", ""),
            Arg("jitter", str, "the delay's variation, e.g. 1ms (needs netem and a delay)", ""),
            Arg("loss", str, "share of packets dropped at random, e.g. 2%", ""),
            Arg("rate", str, "the port's rate cap, e.g. 100mbit (kbit, mbit, gbit)", ""))

    def rules(self, args: dict) -> None:
        """The words, then (as root, where the kernel can be asked) what this machine can set."""
        imp = _read(**{k: args[k] for k in text.KEYS})
        if os.geteuid() == 0:
            try:
                check(imp)
            except text.ImpairProblem as e:
                raise ArgProblem(e.key, e.problem) from None

    def inject(self, faults: Faults, port: str, **words) -> Handle:
        return impair(faults, port, **words)
