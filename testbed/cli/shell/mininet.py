"""Mininet's CLI commands redone for a fabric whose hosts have one address per NIC, none per host
(Mininet's own pingall and iperf ask Host.IP(), which is None here), and whose links go down
from one end (testbed.emulation.faults.inject), not from both as Mininet's `link` does."""
from __future__ import annotations

import itertools
import shlex

from mininet.log import output

from testbed.cli.shell.args import ShellParser, Usage, no_arguments, positive
from testbed.model.fabric import Fabric, Link, Nic
from testbed.workload import traffic

PAIR_RULE = "each NIC to one NIC of every other host: the one on its rail, else the first it routes to"
FULL_RULE = "every NIC pair the fabric routes"
IPERF_PORTS = range(5301, 5400)   # a new port for each test: a server left over never collides


def pingall_pairs(fabric: Fabric, full: bool = False,
                  hosts: list[str] | None = None) -> list[tuple[Nic, Nic]]:
    """The NIC pairs pingall tries (PAIR_RULE; FULL_RULE with `full`), among `hosts` (default all).

    FULL_RULE is Fabric.routed_pairs, as for the bring-up check. PAIR_RULE is not the check's
    sample (testbed.measure.checks.ping_pairs) on purpose: pingall is Mininet's "every host to
    every other host", which a person at the CLI expects whatever the fabric's size, while the
    check must stay linear in NICs on large fabrics."""
    pairs = fabric.routed_pairs(hosts)
    if full:
        return pairs
    chosen: dict[tuple[str, str], tuple[Nic, Nic]] = {}
    for src, dst in pairs:      # per source NIC and other host: its same-rail NIC, else the first
        key = (src.name, dst.host)
        if key not in chosen or dst.rail == src.rail != chosen[key][1].rail:
            chosen[key] = (src, dst)
    return list(chosen.values())


IPERF = ShellParser("iperf")
IPERF.add_argument("-t", type=positive(float), default=5.0, metavar="SECONDS")
IPERF.add_argument("ends", nargs="*", metavar="SRC DST")
IPERF_UDP = ShellParser("iperfudp")
IPERF_UDP.add_argument("-t", type=positive(float), default=5.0, metavar="SECONDS")
IPERF_UDP.add_argument("bw", metavar="BW")
IPERF_UDP.add_argument("ends", nargs="*", metavar="SRC DST")


def megabits(text: str) -> float:
    """iperf's bandwidth notation (10M, 500K, 1G, or bits/s) in Mbit/s."""
    scale = {"k": 1e-3, "m": 1.0, "g": 1e3}.get(text[-1:].lower())
    try:
        value = float(text[:-1] if scale else text) * (scale or 1e-6)
    except ValueError:
        raise Usage(f"bandwidth {text!r}: write it like 10M, 500K or 1G") from None
    if value <= 0:
        raise Usage(f"bandwidth {text!r} must be above 0")
    return value


class MininetCommands:
    """Mixed into the CLI (testbed/cli/shell/cli.py), which sets emu, fabric, faults and mn."""

    _iperf_ports = itertools.cycle(IPERF_PORTS)

    # ---- ping ----
    def do_pingall(self, line):
        """Ping each NIC to the same-rail NIC of every other host.
           Usage: pingall
           Each NIC pings one NIC of every other host: the one on its own rail, else the first
           the fabric routes it to. A pair that fails is tried once more (a first ARP can cost
           a ping)."""
        no_arguments("pingall", line)
        self.ping(pingall_pairs(self.fabric), PAIR_RULE)

    def do_pingallfull(self, line):
        """Ping every NIC pair the fabric routes (slower on large fabrics).
           Usage: pingallfull"""
        no_arguments("pingallfull", line)
        self.ping(pingall_pairs(self.fabric, full=True), FULL_RULE)

    def do_pingpair(self, line):
        """Ping between the first two hosts' NICs, paired as pingall pairs them.
           Usage: pingpair"""
        no_arguments("pingpair", line)
        self.ping(pingall_pairs(self.fabric, hosts=list(self.fabric.hosts)[:2]), PAIR_RULE)

    def do_pingpairfull(self, line):
        """Ping between the first two hosts, every NIC pair the fabric routes.
           Usage: pingpairfull"""
        no_arguments("pingpairfull", line)
        self.ping(pingall_pairs(self.fabric, full=True, hosts=list(self.fabric.hosts)[:2]), FULL_RULE)

    def ping(self, pairs: list[tuple[Nic, Nic]], rule: str) -> None:
        output(f"*** Ping: testing reachability of {len(pairs)} NIC pairs ({rule})\n")
        answered = traffic.ping_all(self.emu, pairs)
        failed = [(s, d) for s, d in pairs if not answered.get((s.ip, d.ip))]
        if failed:
            answered.update(traffic.ping_all(self.emu, failed, count=2))
        for src in dict.fromkeys(s for s, _ in pairs):
            dsts = [d.name if answered.get((s.ip, d.ip)) else "X" for s, d in pairs if s == src]
            output(f"{src.name} -> {' '.join(dsts)}\n")
        received = sum(1 for s, d in pairs if answered.get((s.ip, d.ip)))
        lost = len(pairs) - received
        output(f"*** Results: {100 * lost // max(len(pairs), 1)}% dropped "
               f"({received}/{len(pairs)} received)\n")

    # ---- iperf ----
    def do_iperf(self, line):
        """TCP throughput (iperf3) between two hosts or two NICs.
           Usage: iperf [-t SECONDS] [SRC DST]
           SRC, DST: a host (its first NIC), a NIC (p0s0h0-n1) or an IP; default: the first and
           the last host, for 5 s."""
        args = IPERF.parse(line)
        src, dst = self.iperf_ends(args.ends)
        self.iperf(traffic.Flow(src, dst, dport=next(self._iperf_ports)), args.t)

    def do_iperfudp(self, line):
        """UDP throughput (iperf3) at a rate, between two hosts or NICs.
           Usage: iperfudp [-t SECONDS] BW [SRC DST]
           BW: e.g. 10M or 500K; SRC, DST as for iperf."""
        args = IPERF_UDP.parse(line)
        rate = megabits(args.bw)
        src, dst = self.iperf_ends(args.ends)
        self.iperf(traffic.Flow(src, dst, dport=next(self._iperf_ports), proto="udp"), args.t, rate)

    def iperf_ends(self, ends: list[str]) -> tuple[Nic, Nic]:
        fab = self.fabric
        if not ends:
            first, *_, last = fab.hosts
            return next((s, d) for s, d in pingall_pairs(fab, hosts=[first, last]) if s.host == first)
        if len(ends) != 2:
            raise Usage("name two ends: iperf [-t SECONDS] SRC DST")
        src, dst = fab.nic(ends[0]), fab.nic(ends[1])
        if src.host == dst.host:
            raise Usage(f"{src.name} and {dst.name} are on one host: pick NICs of two hosts")
        if not fab.reachable(src, dst):
            raise Usage(f"the fabric does not route {src.name} to {dst.name}")
        return src, dst

    def iperf(self, flow: traffic.Flow, seconds: float, rate_mbit: float | None = None) -> None:
        src, dst = flow.src, flow.dst
        output(f"*** Iperf: testing {flow.proto.upper()} bandwidth between {src.name} ({src.ip}) "
               f"and {dst.name} ({dst.ip}) for {seconds:g} s\n")
        server = traffic.start_server(self.emu, dst, flow.dport)
        try:   # a Ctrl-C ends both processes, by their PIDs
            client = traffic.start_client(self.emu, flow, seconds, rate_mbit=rate_mbit)
            try:
                result = traffic.wait_client(self.emu, client, seconds + 15)
            finally:
                traffic.stop_clients(self.emu, [client])
        finally:
            self.emu.net[dst.host].stop(server, traffic.IPERF_MARKER)
        end = result["end"]
        sent = (end.get("sum_sent") or end.get("sum") or {}).get("bits_per_second", 0) / 1e6
        lost = (end.get("sum") or {}).get("lost_percent")
        output(f"*** Results: {traffic.received_mbps(result):.2f} Mbits/sec received, "
               f"{sent:.2f} Mbits/sec sent" + (f", {lost:.1f}% lost" if lost is not None else "") + "\n")

    # ---- links and switches, through the session's Faults ----
    def do_link(self, line):
        """Take a cable down or up at its switch end, as `fault link-down` does.
           Usage: link NODE1 NODE2 up|down, or link PORT up|down
           The other end loses carrier; PORT is either interface of the cable. Where two nodes
           share several cables, name the port. Undone on exit."""
        words = line.split()
        if len(words) not in (2, 3) or words[-1] not in ("up", "down"):
            raise Usage("usage: link NODE1 NODE2 up|down, or link PORT up|down")
        self.fault_word(f"link-{words[-1]}", {"port": self.one_cable(words[:-1]).b_intf})

    def one_cable(self, ends: list[str]) -> Link:
        if len(ends) == 1:
            return self.faults.link(ends[0])
        cables = [l for l in self.fabric.links if {l.a, l.b} == set(ends)]
        if not cables:
            raise Usage(f"no cable between {ends[0]} and {ends[1]}")
        if len(cables) > 1:
            raise Usage(f"{len(cables)} cables between {ends[0]} and {ends[1]}: name one by its "
                        f"port ({', '.join(l.a_intf for l in cables)})")
        return cables[0]

    def do_switch(self, line):
        """Take every port of a switch down (stop) or back up (start).
           Usage: switch SWITCH stop|start
           Undone on exit."""
        words = line.split()
        if len(words) != 2 or words[1] not in ("stop", "start"):
            raise Usage("usage: switch SWITCH stop|start")
        self.fault_word("switch-down" if words[1] == "stop" else "switch-up", {"switch": words[0]})

    def do_dpctl(self, line):
        """Run an ovs-ofctl command (OpenFlow 1.5) on every switch.
           Usage: dpctl COMMAND [ARG ...], e.g. dpctl dump-ports"""
        words = shlex.split(line)
        if not words:
            raise Usage("usage: dpctl COMMAND [ARG ...]")
        answers = {sw: self.emu.ofctl(words[0], sw, *words[1:]) for sw in self.fabric.switches}
        for switch, answer in answers.items():   # all asked first: a bad command fails in one line
            output(f"*** {switch} {'-' * 72}\n{answer}")
