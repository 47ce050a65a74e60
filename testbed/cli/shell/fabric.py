"""The testbed's own commands in the CLI: trace, fault, rates, queues, routes, check."""
from __future__ import annotations

import argparse
import functools
import itertools
import time

from mininet.log import output

from testbed.cli.shell.args import ShellParser, Usage, at_least_zero, no_arguments, positive
from testbed.cli.shell.routes import routes_text
from testbed.cli.trace import port_number
from testbed.emulation.faults import registry as fault_registry
from testbed.emulation.faults.kinds import SHELL_WORDS, ArgProblem
from testbed.emulation.trace import emulation_trace
from testbed.measure import bringup, meters
from testbed.model.contract import TABLE_FORWARD

BUSY_MBPS = 0.01       # with no SWITCH named, rates and queues show only ports above this
HELP_WIDTH = 30        # `help fault`: a usage longer than this has its help on the next line

TRACE = ShellParser("trace")
TRACE.add_argument("src", metavar="SRC")
TRACE.add_argument("dst", metavar="DST")
TRACE.add_argument("--sport", type=port_number, default=40000, metavar="N")
TRACE.add_argument("--dport", type=port_number, default=5201, metavar="N")
TRACE.add_argument("--proto", choices=["tcp", "udp"], default="tcp")


def fault_parser() -> ShellParser:
    """`fault`'s parser, made from the fault registry at each use (a kind registered since is in
    it): `fault KIND ARGS` for each kind, `fault REPAIR-WORD ARGS` for each that has one (link-up),
    `fault repair`, `fault list`. Words only: the kind's own `read` checks them, as it checks an
    experiment file's."""
    words = [w for k in fault_registry.kinds() for w in (k.name, k.repair_word) if w] + list(SHELL_WORDS)
    parser = ShellParser("fault")
    sub = parser.add_subparsers(dest="word", metavar="|".join(words))
    parser.words = {}          # word -> its own parser, whose usage line a problem quotes
    for kind in fault_registry.kinds():
        parser.words[kind.name] = sub.add_parser(kind.name)
        add_arguments(parser.words[kind.name], kind.args)
        if kind.repair_word:
            parser.words[kind.repair_word] = sub.add_parser(kind.repair_word)
            add_arguments(parser.words[kind.repair_word], tuple(a for a in kind.args if a.required))
    for word in SHELL_WORDS:
        sub.add_parser(word)
    return parser


def add_arguments(parser: ShellParser, args) -> None:
    for a in args:
        metavar = "|".join(a.choices) if a.choices else a.name.upper()
        if a.positional:
            parser.add_argument(a.name, metavar=metavar, nargs=None if a.required else "?",
                                default=argparse.SUPPRESS)
        else:
            parser.add_argument(f"--{a.name}", metavar=metavar, default=argparse.SUPPRESS,
                                required=a.required)


def fault_args(kind, words: dict, fabric, usage: str, only=None) -> dict:
    """A kind's arguments from the words typed, checked by the kind (Usage naming the problem)."""
    try:
        given = {a.name: a.from_text(words[a.name]) for a in kind.args if a.name in words}
        if only is not None:
            return {a.name: a.check(given[a.name], fabric) for a in kind.args if a.name in only}
        return kind.read(given, fabric)
    except ArgProblem as e:
        raise Usage(f"{e}; usage: {usage}" if usage else str(e)) from None


def fault_help(name: str = "") -> str:
    """`help fault`, from the fault registry (a kind registered since is in it): each kind's usage
    and help, its repair word's, `repair` and `list`; `help fault KIND`: the kind's arguments."""
    parser = fault_parser()
    if name:
        kind = fault_registry.REGISTRY.by_repair_word(name) or fault_registry.get(name)
        lines = [f"{parser.words[name].usage_line()}", f"  {kind.help}" if name == kind.name
                 else f"  repairs {kind.name} early"]
        lines += [f"  {arg_usage(a):<16} {a.help}{arg_limits(a)}" for a in kind.args
                  if name == kind.name or a.required]
        return "\n".join(lines) + "\n"
    rows = []
    for kind in fault_registry.kinds():
        rows.append((parser.words[kind.name].usage_line(), kind.help))
        if kind.repair_word:
            rows.append((parser.words[kind.repair_word].usage_line(), f"repairs {kind.name} early"))
    rows += [("fault repair", "undo every fault now"),
             ("fault list (or just `fault`)", "the faults in place")]
    width = min(max(len(usage) for usage, _ in rows), HELP_WIDTH)
    lines = [f"  {usage:<{width}}  {what}" if len(usage) <= width else f"  {usage}\n  {'':<{width}}  {what}"
             for usage, what in rows]
    return "\n".join(["Inject a fault into the fabric (undone on exit), or list them.", "Usage:", *lines,
                      "`help fault KIND` lists a kind's arguments."]) + "\n"


def arg_usage(a) -> str:
    return (f"{'|'.join(a.choices)}" if a.choices else a.name.upper()) if a.positional else f"--{a.name}"


def arg_limits(a) -> str:
    said = [] if a.required else [f"default {a.default}"]
    if a.bounds is not None:
        said.append(f"{a.bounds[0]} to {a.bounds[1]}")
    return f" ({', '.join(said)})" if said else ""


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
    """Mixed into the CLI (testbed/cli/shell/cli.py), which sets emu, fabric, faults
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
           Usage: fault KIND ARGS | fault repair | fault list; `help fault` lists the kinds
           (the fault registry's: testbed/emulation/faults/registry.py, and any of your own)."""
        parser = fault_parser()
        words = vars(parser.parse(line))
        word = words.pop("word", None)
        if word in (None, "list"):
            return self.list_faults()
        if word == "repair":
            self.faults.repair_all()
            return output("*** every fault undone\n")
        self.fault_word(word, words, parser.words[word].usage_line())

    def help_fault(self, rest: str = "") -> str:
        """`help fault [KIND]` (the CLI's help asks for it): from the fault registry."""
        return fault_help(rest)

    def fault_word(self, word: str, words: dict, usage: str = "") -> None:
        """`fault WORD ...`: inject the kind called `word`, or repair with its repair word."""
        kind = fault_registry.REGISTRY.by_repair_word(word)
        if kind is not None:
            args = fault_args(kind, words, self.fabric, usage, only=words)
            kind.undo(self.faults, **args)
            return output(f"*** {word} {kind.target(args)}\n")
        kind = fault_registry.get(word)
        args = fault_args(kind, words, self.fabric, usage)
        already = kind.already(self.faults, **args)
        if already:
            return output(f"*** {already}\n")
        output(f"*** {kind.name} {kind.target(args)}: {kind.help}\n" if kind.lasts(args) else "")
        output(f"*** {kind.inject(self.faults, **args).note}\n")

    def list_faults(self) -> None:
        if not self.faults.in_place:
            return output("*** no faults in place\n")
        output("*** faults in place (undone on exit, or by `fault repair`):\n")
        for handle in self.faults.in_place:
            output(f"  {handle.note}\n")

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
            flows = self.emu.ofctl("dump-flows", switch, f"table={TABLE_FORWARD}")
            groups = self.emu.ofctl("dump-groups", switch)
            output(routes_text(switch, flows, groups, functools.partial(self.cable_peer, switch)))

    def do_check(self, line):
        """Run the bring-up checks again (about 10 s).
           Usage: check"""
        no_arguments("check", line)
        output("*** running the bring-up checks (about 10 s)\n")
        for c in bringup.run_all(self.emu):
            output(f"  {'pass' if c.passed else 'FAIL'}  {c.name}: {c.detail}\n")
