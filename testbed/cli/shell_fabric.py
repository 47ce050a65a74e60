"""The testbed's own commands in the CLI: trace, fault, rates, queues, routes, check."""
from __future__ import annotations

import functools
import itertools
import time

from mininet.log import output

from testbed.cli.shell_args import ShellParser, Usage, at_least_zero, no_arguments, positive
from testbed.cli.shell_routes import FORWARD_TABLE, routes_text
from testbed.cli.trace import port_number
from testbed.emulation.trace import emulation_trace
from testbed.measure import bringup, meters
from testbed.model.fabric import Link

BUSY_MBPS = 0.01       # with no SWITCH named, rates and queues show only ports above this

TRACE = ShellParser("trace")
TRACE.add_argument("src", metavar="SRC")
TRACE.add_argument("dst", metavar="DST")
TRACE.add_argument("--sport", type=port_number, default=40000, metavar="N")
TRACE.add_argument("--dport", type=port_number, default=5201, metavar="N")
TRACE.add_argument("--proto", choices=["tcp", "udp"], default="tcp")

FAULT = ShellParser("fault")
_kinds = FAULT.add_subparsers(dest="kind", metavar="link-down|link-up|flap|one-way|switch-down|"
                                                   "switch-up|repair|list")
for _kind in ("link-down", "link-up"):
    _kinds.add_parser(_kind).add_argument("port", metavar="PORT")
_flap = _kinds.add_parser("flap")
_flap.add_argument("port", metavar="PORT")
_flap.add_argument("--count", type=positive(int), default=3, metavar="N")
_flap.add_argument("--period", type=positive(float), default=1.0, metavar="SECONDS")
_flap.add_argument("--down", type=positive(float), default=0.5, metavar="SECONDS")
_one_way = _kinds.add_parser("one-way")
_one_way.add_argument("port", metavar="PORT")
_one_way.add_argument("direction", choices=["up", "down"])
for _kind in ("switch-down", "switch-up"):
    _kinds.add_parser(_kind).add_argument("switch", metavar="SWITCH")
_kinds.add_parser("repair")
_kinds.add_parser("list")


def watch_parser(name: str) -> ShellParser:
    p = ShellParser(name)
    p.add_argument("switches", nargs="*", metavar="SWITCH")
    p.add_argument("-n", "--count", type=at_least_zero, default=5, metavar="N")
    p.add_argument("-i", "--interval", type=positive(float), default=1.0, metavar="SECONDS")
    return p


RATES, QUEUES = watch_parser("rates"), watch_parser("queues")
ROUTES = ShellParser("routes")
ROUTES.add_argument("switches", nargs="+", metavar="SWITCH")


def refreshes(count: int, interval: float):
    """Wait `interval` before each of `count` refreshes (0: until Ctrl-C); yields seconds so far."""
    start = time.monotonic()
    for k in itertools.count(1):
        if count and k > count:
            return
        time.sleep(max(0.0, start + k * interval - time.monotonic()))
        yield k * interval


def cable_peers(fabric) -> dict[tuple[str, int], str]:
    """(switch, port) -> the interface at the other end of its cable."""
    peers = {(l.b, l.b_port): l.a_intf for l in fabric.links}
    peers.update({(l.a, l.a_port): l.b_intf for l in fabric.switch_links()})
    return peers


def window_rate(sampler: meters.Sampler, intf: str, seconds: float) -> float:
    """Mbit/s of `intf` over the last `seconds` of a running Sampler."""
    end = time.monotonic() - sampler.t0
    return sampler.mean_rate([intf], end - seconds, end)


class FabricCommands:
    """Mixed into the CLI (testbed/cli/shell.py), which sets emu, fabric, faults, fault_notes
    and peers (cable_peers)."""

    # ---- trace ----
    def do_trace(self, line):
        """The hop-by-hop path of a 5-tuple, read from the switches (ofproto/trace).
           Usage: trace SRC DST [--sport N] [--dport N] [--proto tcp|udp]
           SRC, DST: host (its first NIC), NIC (p0s0h0-n1) or IP"""
        args = TRACE.parse(line)
        src, dst = self.fabric.nic(args.src), self.fabric.nic(args.dst)
        hops = emulation_trace(self.emu, src, dst, proto=args.proto, sport=args.sport, dport=args.dport)
        output(f"*** {args.proto} {src.ip}:{args.sport} -> {dst.ip}:{args.dport} "
               f"({src.name} -> {dst.name}): {len(hops)} hops\n")
        for number, hop in enumerate(hops, 1):
            came = self.cable_peer(hop.switch, hop.in_port)
            went = f"out {hop.out_port} to {self.cable_peer(hop.switch, hop.out_port)}" \
                if hop.out_port else "DROPPED"
            output(f"  {number}  {hop.switch:<10} in {hop.in_port} from {came:<16} {went}\n")

    def cable_peer(self, switch: str, port: int) -> str:
        """The interface at the other end of the cable in `switch`'s `port`."""
        return self.peers.get((switch, port), "?")

    # ---- fault ----
    def do_fault(self, line):
        """Inject a fault into the fabric (undone on exit), or list them.
           Usage: fault link-down PORT | fault link-up PORT
                  fault flap PORT [--count N] [--period SECONDS] [--down SECONDS]
                  fault one-way PORT up|down   (up: the lower end -> the upper one, e.g. NIC -> ToR)
                  fault switch-down SWITCH | fault switch-up SWITCH
                  fault repair (undo every fault now) | fault list (or just `fault`)
           PORT: either interface of a cable, e.g. p0s0h0-n0p0 or p0s0r0t0-eth1"""
        args = FAULT.parse(line)
        if args.kind in (None, "list"):
            return self.list_faults()
        if args.kind == "repair":
            self.fault_notes.clear()
            self.faults.repair_all()
            return output("*** every fault undone\n")
        if args.kind.startswith("switch-"):
            return self.switch_fault(args.switch, args.kind.removeprefix("switch-"))
        link = self.faults.link(args.port)
        if args.kind == "flap":
            return self.flap(link, args.count, args.period, args.down)
        if args.kind == "one-way":
            dropped = f"{link.a} -> {link.b}" if args.direction == "up" else f"{link.b} -> {link.a}"
            return self.inject(f"{link.a_intf} <-> {link.b_intf}: {dropped} dropped, carrier up",
                               self.faults.one_way, link, args.direction)
        self.link_fault(link, args.kind.removeprefix("link-"))

    def inject(self, note: str, fault, *args):
        """Run a Faults method; name what it left to undo by `note`, for `fault list`."""
        before = [undo for _, undo in self.faults.undo]
        result = fault(*args)
        for _, undo in self.faults.undo:
            if undo not in before:
                self.fault_notes[undo] = note
        output(f"*** {note}\n")
        return result

    def list_faults(self) -> None:
        if not self.faults.undo:
            return output("*** no faults in place\n")
        output("*** faults in place (undone on exit, or by `fault repair`):\n")
        for description, undo in self.faults.undo:
            output(f"  {self.fault_notes.get(undo, description)}\n")

    def link_fault(self, link: Link, state: str) -> None:
        if state == "down" and f"link {link.b_intf} up" in (d for d, _ in self.faults.undo):
            output(f"*** {link.b_intf} is down already\n")
        elif state == "down":
            self.inject(f"{link.b_intf} down (its peer {link.a_intf} lost carrier)",
                        self.faults.link_down, link)
        else:
            self.faults.link_up(link)
            output(f"*** {link.b_intf} up\n")

    def switch_fault(self, switch: str, state: str) -> None:
        if switch not in self.fabric.switches:
            raise Usage(f"no switch {switch!r} in this fabric")
        if state == "down":
            self.inject(f"switch {switch} down (every port)", self.faults.switch_down, switch)
        else:
            self.faults.switch_up(switch)
            output(f"*** switch {switch} up\n")

    def flap(self, link: Link, count: int, period: float, down: float) -> None:
        if down >= period:
            raise Usage(f"--down {down:g} must be shorter than --period {period:g}")
        output(f"*** flapping {link.b_intf}: {count} times, every {period:g} s, down {down:g} s\n")
        try:
            times = self.faults.flap_train(link, count, period, down)
        except KeyboardInterrupt:   # stopped mid-flap: leave the link up, as a finished train does
            self.faults.link_up(link)
            raise
        output(f"*** flapped at {', '.join(f'{t:.2f}' for t in times)} s; {link.b_intf} is up\n")

    # ---- rates, queues ----
    def watched_ports(self, switches: list[str]) -> list[tuple[str, str]]:
        """(switch port, what is cabled to it) of `switches` (default every switch), in port order."""
        for name in switches:
            if name not in self.fabric.switches:
                raise Usage(f"no switch {name!r} in this fabric")
        order = {sw: i for i, sw in enumerate(switches or self.fabric.switches)}
        ends = [(l.b, l.b_port, l.b_intf, l.a_intf) for l in self.fabric.links] + \
            [(l.a, l.a_port, l.a_intf, l.b_intf) for l in self.fabric.switch_links()]
        ends = sorted((e for e in ends if e[0] in order), key=lambda e: (order[e[0]], e[1]))
        return [(intf, peer) for _, _, intf, peer in ends]

    def do_rates(self, line):
        """Live per-port rates of switches, refreshed (Ctrl-C stops).
           Usage: rates [SWITCH ...] [-n COUNT (0: until Ctrl-C)] [-i SECONDS]
           in: what the switch port received, out: what it sent (Mbit/s). Default: 5 times,
           every 1 s; with no SWITCH, the busy ports of every switch."""
        args = RATES.parse(line)
        ports = self.watched_ports(args.switches)
        intfs, period = [i for i, _ in ports], args.interval / 4
        output(f"*** rates of {len(ports)} switch ports, Mbit/s over each {args.interval:g} s\n")
        with self.emu.sampler(intfs, period, counter="rx_bytes", queues=False) as got, \
                self.emu.sampler(intfs, period, counter="tx_bytes", queues=False) as sent:
            for elapsed in refreshes(args.count, args.interval):
                lines = []
                for intf, peer in ports:
                    r_in, r_out = (window_rate(s, intf, args.interval) for s in (got, sent))
                    if args.switches or max(r_in, r_out) >= BUSY_MBPS:
                        lines.append(f"  {intf:<16} {peer:<16} in {r_in:8.2f}  out {r_out:8.2f}\n")
                output(f"--- {elapsed:g} s\n" + ("".join(lines) or "  (no busy port)\n"))

    def do_queues(self, line):
        """Live per-port queue bytes of switches, refreshed (Ctrl-C stops).
           Usage: queues [SWITCH ...] [-n COUNT (0: until Ctrl-C)] [-i SECONDS]
           queue: bytes waiting in the port's egress queue now, max: the most in the last
           interval, out: Mbit/s sent. Default: 5 times, every 1 s; with no SWITCH, the busy
           ports of every switch."""
        args = QUEUES.parse(line)
        ports = self.watched_ports(args.switches)
        intfs, period = [i for i, _ in ports], args.interval / 4
        output(f"*** queues of {len(ports)} switch ports, bytes (egress bfifo of "
               f"{self.emu.options.queue_bytes} B)\n")
        with self.emu.sampler(intfs, period, queues=True) as sampler:
            for elapsed in refreshes(args.count, args.interval):
                since, lines = time.monotonic() - sampler.t0 - args.interval, []
                for intf, peer in ports:
                    queued = [q for t, _, q in sampler.series[intf] if t >= since] or [0]
                    rate = window_rate(sampler, intf, args.interval)
                    if args.switches or max(queued) or rate >= BUSY_MBPS:
                        lines.append(f"  {intf:<16} {peer:<16} queue {queued[-1]:7d}  "
                                     f"max {max(queued):7d}  out {rate:8.2f}\n")
                output(f"--- {elapsed:g} s\n" + ("".join(lines) or "  (no busy port)\n"))

    # ---- routes, check ----
    def do_routes(self, line):
        """The controller's rules on switches (forwarding table, groups), condensed.
           Usage: routes SWITCH [SWITCH ...]"""
        args = ROUTES.parse(line)
        for switch in args.switches:
            if switch not in self.fabric.switches:
                raise Usage(f"no switch {switch!r} in this fabric")
        for switch in args.switches:
            flows = self.emu.ofctl("dump-flows", switch, f"table={FORWARD_TABLE}")
            groups = self.emu.ofctl("dump-groups", switch)
            output(routes_text(switch, flows, groups, functools.partial(self.cable_peer, switch)))

    def do_check(self, line):
        """Run the bring-up checks again (about 10 s).
           Usage: check"""
        no_arguments("check", line)
        output("*** running the bring-up checks (about 10 s)\n")
        for c in bringup.run_all(self.emu):
            output(f"  {'pass' if c.passed else 'FAIL'}  {c.name}: {c.detail}\n")
