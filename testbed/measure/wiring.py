"""The wiring check: is every cable where the blueprint has it? (HPN lessons: early builds were
miswired; probes that record switch and port at every hop were compared with the blueprint
before any end-to-end test.)

Open vSwitch cannot stamp INT headers, so this is postcard mode: every switch reports each probe
it receives to the controller with the port it came in on (a rule the controller installs at
connect; probes go no further), and the controller writes those postcards to the run's
sightings file. A probe, built with scapy (Ethernet, IEEE local experimental EtherType, the
probe's name as payload), goes into every cable end: out of every host port from inside its
host, and out of every switch port facing a switch from the port's own interface (the cable
end, as the switch would send on it), all from one process. Where each one came out, against
the blueprint, names every cable that is not where it should be (testbed.model.wiring).
"""
from __future__ import annotations

import functools
import time

from testbed.measure.checks import Check
from testbed.model import wiring
from testbed.model.contract import PROBE_ETHERTYPE

PROBE_MAC = "02:fe:00:00:00:02"
WAIT_S = 10.0


@functools.lru_cache(maxsize=1)
def probe_header() -> bytes:
    from scapy.layers.l2 import Ether
    return bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src=PROBE_MAC, type=PROBE_ETHERTYPE))


def probe_frame(probe: str) -> bytes:
    """The probe: an Ethernet header (built once, with scapy), then its name, NUL-ended."""
    return probe_header() + probe.encode() + b"\0"


def probes(fabric) -> dict[str, wiring.End]:
    """A probe (by name) for every cable end whose far end, in the blueprint, is a switch (which
    reports it): every host port and every switch port facing a switch. A probe into a switch
    port facing a host would reach the host, which sends no postcard."""
    peer = wiring.blueprint_peer(fabric)
    return {f"wiring:{wiring.name(end)}": end for end in peer if peer[end][0] in fabric.switches}


def send_probes(emu, sent: dict[str, wiring.End]) -> None:
    fab = emu.fabric
    lines = []
    for probe, (node, port) in sent.items():
        frame = probe_frame(probe).hex()
        if node in fab.switches:      # the switch port's interface, in the root namespace
            lines.append(f"0 {node}-eth{port} {frame}")
        else:
            lines.append(f"{emu.net[node].pid} {port} {frame}")
    emu.site.send_frames(lines)


def sightings(emu, sent: dict[str, wiring.End]) -> dict[wiring.End, wiring.End]:
    """Where each probe came out: sent end -> (switch, in port), for the probes seen so far."""
    seen = {}
    for card in emu.controller.sightings():
        if card["probe"] in sent:
            seen[sent[card["probe"]]] = (card["switch"], card["in_port"])
    return seen


def check(emu) -> Check:
    """Probe every cable end; fail naming each cable found where the blueprint has none."""
    fab = emu.fabric
    expect = probes(fab)
    send_probes(emu, expect)
    deadline = time.monotonic() + WAIT_S
    seen = sightings(emu, expect)
    while len(seen) < len(expect) and time.monotonic() < deadline:   # postcards still arriving
        time.sleep(0.05)
        seen = sightings(emu, expect)
    wrong = wiring.wrong_cables(fab, seen)
    silent = sorted(wiring.name(end) for end in expect.values() if end not in seen)
    detail = f"{len(seen)}/{len(expect)} probes came out where the blueprint says"
    if wrong:
        detail = "miswired: " + "; ".join(f"{w['cable'][0]} is cabled to {w['cable'][1]}" for w in wrong)
    if silent:
        detail += f"; {len(silent)} probes never came out (e.g. {silent[0]})"
    return Check("wiring", not wrong and not silent, detail,
                 {"probes": len(expect), "seen": len(seen), "wrong": wrong, "silent": silent})

