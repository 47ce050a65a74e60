"""Link impairments as text: delay, jitter, loss and a rate cap on one port's sending side, read
from the words users know (containerlab's `tools netem`, Mininet's TCLink: `5ms`, `2%`,
`100mbit`) and turned into the shell lines that set them. Pure: the fault kind
(testbed/emulation/faults/impair.py) runs the lines where the port lives.

Every port of a fabric is shaped at bring-up (shaping.py): HTB class 5:1 at the cable's rate over
a bfifo leaf, handle 10:. An impairment works inside that:
  - rate: the HTB class's rate changed (put back to the cable's on clear);
  - delay, jitter, loss where the kernel has sch_netem: the bfifo leaf replaced by netem (a qdisc's
    kind cannot change under one handle: delete, then add), the bfifo put back on clear;
  - loss without netem: an nftables netdev egress hook on the port dropping
    `numgen random mod 10000 < N` (N in hundredths of a percent), the way one-way faults drop;
  - delay or jitter without netem: refused, in one line; never a silent no-op.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from testbed.core.errors import ParamError
from testbed.emulation.net.shaping import rate_lines

KEYS = ("delay", "jitter", "loss", "rate")
_NUMBER = r"(\d+(?:\.\d*)?|\.\d+)"
_TIME_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "": 1.0}          # to ms; bare: ms
_RATE_UNITS = {"kbit": 0.001, "mbit": 1.0, "gbit": 1000.0, "": 1.0}   # to Mbit/s; bare: mbit
MAX_DELAY_MS = 60_000.0
MAX_RATE_MBIT = 100_000.0
NETEM_LIMIT = 1000      # packets netem holds (its default): a delayed port's queue, not the bfifo's


class ImpairProblem(ParamError):
    """An impairment refused: `key` (delay, jitter, loss, rate; None: the whole) and why."""

    def __init__(self, key: str | None, problem: str):
        super().__init__(f"{key}: {problem}" if key else problem)
        self.key, self.problem = key, problem


@dataclass(frozen=True)
class Impairment:
    """What a port's sending side suffers: added delay and its jitter (ms), the share of packets
    dropped (%), and a rate cap (Mbit/s; None: the cable's own)."""
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    rate_mbit: float | None = None

    @property
    def needs_netem(self) -> bool:
        return bool(self.delay_ms or self.jitter_ms)

    def describe(self) -> str:
        """`delay 5ms, jitter 1ms, loss 2%, rate 100mbit` (what is set only)."""
        parts = [f"delay {self.delay_ms:g}ms" if self.delay_ms else "",
                 f"jitter {self.jitter_ms:g}ms" if self.jitter_ms else "",
                 f"loss {self.loss_pct:g}%" if self.loss_pct else "",
                 f"rate {self.rate_mbit:g}mbit" if self.rate_mbit else ""]
        return ", ".join(p for p in parts if p)


def _number(key: str, text, units: dict[str, float], example: str) -> float:
    """`text` (a word such as `5ms`, or a number: the default unit) as a number in the base unit."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = str(text)
    m = re.fullmatch(_NUMBER + r"\s*([a-z]*)", str(text).strip().lower())
    if not m or m.group(2) not in units:
        raise ImpairProblem(key, f"{text!r}: expected a number with one of "
                                 f"{', '.join(u for u in units if u)} (e.g. {example})")
    return float(m.group(1)) * units[m.group(2)]


def parse(delay="", jitter="", loss="", rate="") -> Impairment:
    """An Impairment from words (`5ms`, `1ms`, `2%`, `100mbit`) or numbers (ms, %, Mbit/s);
    empty: not set. ImpairProblem names the key refused."""
    delay_ms = _number("delay", delay, _TIME_UNITS, "5ms") if delay != "" else 0.0
    jitter_ms = _number("jitter", jitter, _TIME_UNITS, "1ms") if jitter != "" else 0.0
    loss_pct = _number("loss", str(loss).removesuffix("%"), {"": 1.0}, "2%") if loss != "" else 0.0
    rate_mbit = _number("rate", rate, _RATE_UNITS, "100mbit") if rate != "" else None
    for key, value, high in (("delay", delay_ms, MAX_DELAY_MS), ("jitter", jitter_ms, MAX_DELAY_MS),
                             ("loss", loss_pct, 100.0)):
        if not 0 <= value <= high:
            raise ImpairProblem(key, f"{value:g}: must be between 0 and {high:g}")
    if rate_mbit is not None and not 0 < rate_mbit <= MAX_RATE_MBIT:
        raise ImpairProblem("rate", f"{rate}: must be above 0 and at most {MAX_RATE_MBIT:g}mbit")
    if jitter_ms and not delay_ms:
        raise ImpairProblem("jitter", "needs a delay to vary (netem's jitter is around a delay)")
    imp = Impairment(delay_ms, jitter_ms, loss_pct, rate_mbit)
    if not imp.describe():
        raise ImpairProblem(None, "nothing to impair: give a delay, jitter, loss or rate")
    return imp


def refusal(imp: Impairment, netem: bool, htb: bool, nft_egress: bool) -> ImpairProblem | None:
    """Why this machine cannot set `imp` (given what its kernel has), or None."""
    if imp.needs_netem and not netem:
        key = "delay" if imp.delay_ms else "jitter"
        return ImpairProblem(key, "netem is not available on this kernel (no sch_netem): here only "
                                  "loss (nftables) and rate (HTB) can be set")
    if imp.loss_pct and not netem and not nft_egress:
        return ImpairProblem("loss", "this kernel has neither netem nor an nftables egress hook")
    if imp.rate_mbit and not htb:
        return ImpairProblem("rate", "this kernel has no HTB (sch_htb)")
    return None


def table_name(run_id: str, intf: str) -> str:
    """The nftables table of `intf`'s loss rule: one per port and run, so that impairing a port
    again replaces it and clearing finds it."""
    return re.sub(r"[^A-Za-z0-9_]", "_", f"hpn_{run_id}_impair_{intf}")


def loss_rules(intf: str, table: str, loss_pct: float) -> str:
    """The nft script dropping `loss_pct` % of what `intf` sends, at random (0.01 % steps)."""
    return (f"table netdev {table} {{ chain impair {{ type filter hook egress device \"{intf}\" "
            f"priority 0; numgen random mod 10000 < {round(loss_pct * 100)} drop; }}; }}")


def _netem(imp: Impairment) -> str:
    words = [f"delay {imp.delay_ms:g}ms" + (f" {imp.jitter_ms:g}ms" if imp.jitter_ms else "")
             if imp.delay_ms else "", f"loss {imp.loss_pct:g}%" if imp.loss_pct else ""]
    return " ".join(w for w in words if w) + f" limit {NETEM_LIMIT}"


def clear_script(intf: str, table: str, link_mbit: float, queue_bytes: int) -> str:
    """Shell lines putting `intf` back as bring-up shaped it: no loss table, the bfifo leaf where
    netem replaced it, the cable's rate. Harmless on a port that was never impaired."""
    leaf = f"tc qdisc show dev {intf} | grep -q 'qdisc netem 10:'"
    return "\n".join([
        f"nft delete table netdev {table} 2>/dev/null || true",
        f"if {leaf}; then tc qdisc del dev {intf} parent 5:1 handle 10:; "
        f"tc qdisc add dev {intf} parent 5:1 handle 10: bfifo limit {queue_bytes}; fi",
        *(f"tc {line}" for line in rate_lines(intf, link_mbit))])


def apply_script(imp: Impairment, intf: str, table: str, netem: bool, link_mbit: float,
                 queue_bytes: int) -> str:
    """Shell lines setting `imp` on `intf` (what was set before is cleared first): netem where
    `netem`, else loss by nftables; the rate on the HTB class."""
    lines = [clear_script(intf, table, link_mbit, queue_bytes)]
    if netem and (imp.needs_netem or imp.loss_pct):
        lines += [f"tc qdisc del dev {intf} parent 5:1 handle 10:",
                  f"tc qdisc add dev {intf} parent 5:1 handle 10: netem {_netem(imp)}"]
    elif imp.loss_pct:
        lines.append(f"nft -f - <<'EOF'\n{loss_rules(intf, table, imp.loss_pct)}\nEOF")
    if imp.rate_mbit:
        lines += [f"tc {line}" for line in rate_lines(intf, imp.rate_mbit)]
    return "\n".join(lines)


def uses_table(imp: Impairment, netem: bool) -> bool:
    """Does setting `imp` make an nftables table (one to record before it exists)?"""
    return bool(imp.loss_pct) and not netem


def mechanism(imp: Impairment, netem: bool) -> str:
    """What sets `imp` here, for the user: `netem, HTB` or `nftables`..."""
    used = ["netem" if netem else "nftables"] if imp.needs_netem or imp.loss_pct else []
    return ", ".join(used + (["HTB"] if imp.rate_mbit else []))
