"""Emulation.set_rates: a running fabric's cables take another parameter set's rates (how
core-pipeline compares two cores on one bring-up). The tc lines it would run, no root."""
import pytest

from testbed.emulation.build import Emulation
from testbed.model import make_fabric

BASE = {"pods": 2, "aggs_per_plane": 1, "cores": 1}


def emulation_of(fabric):
    """An Emulation that records the switches' tc lines instead of running them."""
    emu = object.__new__(Emulation)
    emu.fabric, emu.sent = fabric, {}
    emu.site = type("Site", (),
                    {"switches_batch": lambda _, command, lines: emu.sent.update({command: lines})})()
    return emu


def test_only_the_core_links_change_and_the_new_fabric_is_the_model():
    over, flat = make_fabric("hpn", BASE), make_fabric("hpn", {**BASE, "core_oversubscription": 1})
    emu = emulation_of(over)
    emu.set_rates(flat)
    assert emu.fabric is flat
    core_links = [l for l in flat.links if "c0" in (l.a, l.b)]
    ends = {intf for l in core_links for intf in (l.a_intf, l.b_intf)}
    (command, per_switch), = emu.sent.items()
    lines = [x for ls in per_switch.values() for x in ls]
    assert command == "tc -batch -" and set(per_switch) == {"c0", "p0a0n0", "p0a1n0", "p1a0n0", "p1a1n0"}
    assert {x.split()[3] for x in lines} == ends and len(lines) == len(ends)
    rate = flat.link_mbit(core_links[0])
    assert all(x.startswith("class change") and f"rate {rate:.4f}mbit" in x for x in lines), lines


def test_other_cables_are_refused_and_nothing_changes():
    over = make_fabric("hpn", BASE)
    emu = emulation_of(over)
    with pytest.raises(ValueError, match="cables"):
        emu.set_rates(make_fabric("hpn", {**BASE, "hosts": 4}))
    assert emu.fabric is over and emu.sent == {}
