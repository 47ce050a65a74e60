"""Expedited RCU grace periods while a fabric's switches are removed, and the setting put back.

On the userspace datapath every switch port is a packet socket of ovs-vswitchd, and the kernel
closes each one after an RCU grace period (`synchronize_net`): ovs-vswitchd deletes its ports one
after another, so a bridge's removal waits out one grace period per port, most of a segment's
teardown (bench/results/journal.md, 2026-12-02). With /sys/kernel/rcu_expedited set the kernel ends those
grace periods at once (an interrupt to each CPU) instead of waiting for them.

It is a setting of the whole machine, so it is changed only while the bridges go and only from
0: its old value is recorded in the run state before it is written (`clean` puts back what a
run that died left), and put back by the teardown's last step. Where /sys is read-only (a
container) nothing changes.
"""
from __future__ import annotations

from pathlib import Path

KNOB = Path("/sys/kernel/rcu_expedited")
KNOBS = {str(KNOB)}             # the only settings a run may record and `clean` may put back


def expedite(state) -> None:
    """Set rcu_expedited to 1 for this run, its old value recorded first (nothing if already 1)."""
    try:
        if KNOB.read_text().strip() != "0":
            return
    except OSError:
        return
    state.add("knobs", f"{KNOB}=0")
    try:
        KNOB.write_text("1")
    except OSError:
        pass


def restore(recorded: list[str]) -> list[str]:
    """Put back each recorded `PATH=VALUE` of a known setting; returns what was put back."""
    done = []
    for entry in recorded:
        path, _, value = entry.partition("=")
        if path not in KNOBS or value not in ("0", "1"):
            continue
        try:
            if Path(path).read_text().strip() != value:
                Path(path).write_text(value)
                done.append(f"{path} back to {value}")
        except OSError:
            continue
    return done
