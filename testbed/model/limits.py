"""How big a fabric may be, checked from its parameters alone, before any model object is built.

A family's parameters say by arithmetic how many switches, hosts, NICs and links it has and how
many ports each switch needs (testbed.model.params). Here those figures meet the limits: the
emulator's (what Mininet and Open vSwitch bring up here in reasonable time and memory), the
model's (paper-scale budgets, objects only, never emulated) and the switches' radix. A refusal
costs microseconds, where building the refused fabric could take minutes and gigabytes.
"""
from __future__ import annotations

from dataclasses import dataclass

from testbed.core.errors import ParamError
from testbed.model.params import Params, changed

MIN_LINK_MBIT = 0.01     # slower, a port moves under one 1,500-byte packet a second: too coarse to measure
RAM_SHARE = 0.5          # a fabric may take at most this share of the machine's memory


@dataclass(frozen=True)
class Size:
    """A fabric's counts, by arithmetic before anything is built (what a family's
    Params.size() returns): checked against this machine's limits."""
    switches: int
    hosts: int
    nics: int
    links: int


@dataclass(frozen=True)
class Limit:
    """The largest fabric one consumer takes, and what each part of it costs in memory."""
    who: str
    switches: int
    hosts: int
    links: int
    # bytes per part: of model objects (measured with tracemalloc, rounded up), plus for the
    # emulator what the kernel and processes take (measured on a live fabric: MemAvailable)
    per_switch: int
    per_host: int
    per_nic: int
    per_link: int

    def memory(self, size: Size) -> int:
        return (size.switches * self.per_switch + size.hosts * self.per_host
                + size.nics * self.per_nic + size.links * self.per_link)


# The model: 10x the HPN paper preset (728 switches, 4,080 hosts, 96,000 links: built in about
# 0.5 s and 40 MB). Costs per part measured with tracemalloc on the presets, rounded up by half.
MODEL = Limit("the model", switches=100_000, hosts=100_000, links=1_000_000,
              per_switch=250, per_host=250, per_nic=450, per_link=400)
# The emulator: bring-up grows about linearly with the parts (the default HPN's 70 in ~3 s
# here); one full HPN segment (the `segment` preset: 32 switches, 136 hosts, 2,304 links)
# must fit, with room for a larger uplink tier. Per part: every host and switch runs a
# shell (0.4 MB of its own, measured) and is a namespace or a bridge, every link is a veth
# pair with HTB on both ends and an OVS port: kernel memory we could not measure apart from
# other runs, so these are generous round figures.
EMULATOR = Limit("the emulator", switches=512, hosts=512, links=4096,
                 per_switch=2_000_000, per_host=2_000_000, per_nic=100_000, per_link=1_000_000)


def check(params: Params, emulated: bool = True) -> None:
    """ParamError unless the fabric of `params` fits its consumer, its radix and (emulated) the
    slowest rate the emulator shapes meaningfully."""
    size = params.size()
    check_size(params, size, EMULATOR if emulated else MODEL)
    check_ports(params)
    if emulated:
        check_rates(params)


def check_size(params: Params, size: Size, limit: Limit) -> None:
    for what in ("switches", "hosts", "links"):
        count, most = getattr(size, what), getattr(limit, what)
        if count > most:
            raise ParamError(f"{changed(params)}: {count:,} {what}; {limit.who}'s limit is {most:,}")
    need, ram = limit.memory(size), ram_bytes()
    if need > ram * RAM_SHARE:
        raise ParamError(f"{changed(params)}: {size.switches:,} switches, {size.hosts:,} hosts and "
                         f"{size.links:,} links need about {need / 2**30:.1f} GiB for {limit.who}; "
                         f"this machine has {ram / 2**30:.1f} GiB, of which a fabric may take "
                         f"{RAM_SHARE:.0%}")


def check_ports(params: Params) -> None:
    """Every switch's cables fit its radix (the same rule Fabric.validate checks when built)."""
    radix = params.switch_radix()
    for role, (down, up) in params.ports().items():
        if down + up > radix:
            raise ParamError(f"radix={radix}: a {role} switch needs {down + up:,} ports "
                             f"({down:,} down, {up:,} up); raise radix or reduce the fan-out")


def check_rates(params: Params) -> None:
    slowest = min(params.link_gbps())
    if slowest * params.scale < MIN_LINK_MBIT:
        raise ParamError(f"{changed(params)}: the slowest link ({slowest:.3g}G) at scale="
                         f"{params.scale} would be emulated at {slowest * params.scale:.3g} Mbit/s; "
                         f"the emulator needs at least {MIN_LINK_MBIT} Mbit/s (raise scale or the rates)")


def ram_bytes() -> int:
    """This machine's memory (MemTotal of /proc/meminfo); 4 GiB where that cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 4 * 2**30
