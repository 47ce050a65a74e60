"""iperf3 traffic: TCP or UDP flows between two hosts (all their NICs, NIC i to NIC i) or two
NICs, for a set time; each flow has its own server port, 5201 + 20 x the item's index + its own."""
from __future__ import annotations

from dataclasses import dataclass

from testbed.core.errors import ParamError
from testbed.experiments.spec import SECONDS
from testbed.experiments.traffic.kind import Run, Traffic, key
from testbed.workload import traffic
from testbed.workload.hashports import cport_base

DEFAULT_SECONDS = 10.0
END = "a host (all its NICs, NIC i to NIC i) or a NIC (HOST-nI)"


@dataclass(frozen=True, kw_only=True)
class Iperf3(Traffic):
    kind, help = "iperf3", "iperf3 flows from a host or NIC to another"
    src: str = key(str, END, toml="from")
    dst: str = key(str, "the receiving host or NIC, as `from`", toml="to")
    streams: int = key(int, "streams per NIC", 1, bounds=(1, 64))
    seconds: float | None = key(float, f"s it runs (default {DEFAULT_SECONDS:g}), or give `stop`", None,
                                bounds=(1.0, 3600.0))
    stop: float | None = key(float, "s on the experiment's clock when it stops", None, bounds=SECONDS)
    protocol: str = key(str, "udp needs rate_mbit", "tcp", choices=("tcp", "udp"))
    rate_mbit: float | None = key(float, "a cap per stream in Mbit/s, for udp the rate it sends", None,
                                  bounds=(0.01, 100_000.0))

    def check(self, fab, fail) -> None:
        if self.stop is not None and self.stop - self.start < 1.0:
            fail("stop", f"{self.stop:g}: must be at least 1 s after start={self.start:g}")
        if None not in (self.stop, self.seconds) and abs(self.start + self.seconds - self.stop) > 1e-9:
            fail("stop", f"{self.stop:g} disagrees with start={self.start:g} + seconds={self.seconds:g}: "
                         "give one of them")
        if self.protocol == "udp" and self.rate_mbit is None:
            fail("protocol", "udp needs rate_mbit (iperf3 sends UDP at 1 Mbit/s otherwise)")
        self.pairs(fab, fail)

    @classmethod
    def schema_rules(cls) -> dict:
        return {"if": {"properties": {"protocol": {"const": "udp"}}, "required": ["protocol"]},
                "then": {"required": ["rate_mbit"]}}

    @property
    def length(self) -> float:
        """`seconds`, or `stop` - `start`."""
        if self.stop is not None:
            return self.stop - self.start
        return DEFAULT_SECONDS if self.seconds is None else self.seconds

    def watched(self) -> tuple[str, ...]:
        return (self.src,)

    def pairs(self, fab, fail) -> list[tuple]:
        """The (src NIC, dst NIC) of each flow: a host is all its NICs, NIC i to NIC i.
        `fail(key, problem)` raises."""
        ends = []
        for name, ref in (("from", self.src), ("to", self.dst)):
            if ref in fab.hosts:
                ends.append(list(fab.hosts[ref].nics))
            elif ref in {n.name for n in fab.nics()}:
                ends.append([fab.nic(ref)])
            else:
                fail(name, f"no host or NIC {ref!r} in this {fab.family} fabric ({END})")
        if (self.src in fab.hosts) != (self.dst in fab.hosts):
            fail("to", "from and to must both be hosts or both be NICs")
        pairs = list(zip(*ends))
        if any(a.host == b.host for a, b in pairs):
            fail("to", "a host does not send to itself over the fabric")
        return pairs

    def runner(self, emu, n: int) -> Flows:
        return Flows(emu, self, n)


class Flows(Run):
    """An iperf3 item's flows: every server up front, every client at its `start`, together
    (traffic.start_together: their rates are over one window)."""

    def __init__(self, emu, t: Iperf3, n: int):
        self.emu, self.t, self.clients, self.flows = emu, t, [], []
        for j, (src, dst) in enumerate(t.pairs(emu.fabric, refuse)):
            dport = 5201 + 20 * n + j
            sport = cport_base(emu, src, dst, t.streams, dport) if t.protocol == "tcp" else None
            self.flows.append(traffic.Flow(src, dst, dport=dport, sport=sport, proto=t.protocol,
                                           parallel=t.streams))

    def prepare(self) -> None:
        for flow in self.flows:
            traffic.start_server(self.emu, flow.dst, flow.dport)

    def begin(self) -> None:
        self.clients = traffic.start_together(self.emu, self.flows, self.t.length, rate_mbit=self.t.rate_mbit)

    def wait(self) -> list[dict]:
        t = self.t
        return [{"where": t.where, "flow": f"{c.flow.src.name} -> {c.flow.dst.name}", "streams": t.streams,
                 "protocol": t.protocol, "start": t.start, "received_mbps": round(traffic.received_mbps(
                     traffic.wait_client(self.emu, c, t.length + 20)), 3)} for c in self.clients]


def refuse(key, problem):
    """A checked file's pairs cannot fail; if they do, say which key."""
    raise ParamError(f"{key}: {problem}")
