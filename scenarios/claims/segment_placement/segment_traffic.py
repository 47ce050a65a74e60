"""The traffic segment-placement (C7) measures with: the tier-2 counters and the background.

Tier2 reads the ToR uplink ports (what goes up to the aggregation tier) and the background
hosts' ToR ports; Background runs iperf3 between hosts of neighbouring segments, paced by the
kernel so that every ToR uplink carries a chosen share of its rate.
"""
from __future__ import annotations

import time

from testbed.core.errors import TestbedError
from testbed.core.wait import wait_for
from testbed.workload import collectives as C
from testbed.workload import traffic
from testbed.workload.hashports import cport_base

BG_PORT = 5601


class Tier2:
    """Counters of the ToR uplinks (what goes up to the aggregation tier) and of the background
    hosts' ToR ports (what they sent into the fabric: all of it crosses tier 2)."""

    def __init__(self, emu, bg_hosts: list[str]):
        fab, self.emu = emu.fabric, emu
        self.up = [l.a_intf for l in fab.switch_links() if fab.switches[l.a].role == "tor"]
        self.bg = [l.b_intf for l in fab.host_links() if l.a in bg_hosts]

    def read(self) -> tuple[dict, dict]:
        return (self.emu.counters(self.up, ("tx_bytes", "tx_packets")),
                self.emu.counters(self.bg, ("rx_bytes", "rx_packets")))

    @staticmethod
    def delta(before: tuple, after: tuple) -> dict:
        """Between two reads: payload the ToRs sent up, their wire bytes, and the payload the
        background hosts sent."""
        up, bg = C.delivered_payload(before[0], after[0]), C.delivered_payload(before[1], after[1])
        wire = sum(after[0][i][0] - before[0][i][0] for i in after[0])
        return {"up": up, "wire": wire, "bg": bg}

    def wire_mbit(self, seconds: float = 0.5) -> float:
        """What the ToRs send up, Mbit/s over a window of `seconds`."""
        before = self.emu.counters(self.up)
        time.sleep(seconds)     # the measurement window (the caller polls on the rate it gives)
        after = self.emu.counters(self.up)
        return sum(after[i][0] - before[i][0] for i in self.up) * 8 / 1e6 / seconds


class Background:
    """iperf3 from every NIC of each (src, dst) host pair, `streams` per NIC port (spread evenly
    over the ports by their source ports), each paced so that every ToR uplink, which carries
    `per_uplink` of them, runs at `load` of its rate."""

    def __init__(self, emu, pairs: list[tuple[str, str]], load: float, streams: int, per_uplink: int,
                 seconds: float, port_base: int = BG_PORT):
        fab = emu.fabric
        self.emu, self.load, self.seconds = emu, load, seconds
        self.flows, self.servers, self.clients, self.ran_throughout = [], [], [], True
        uplinks = [l for l in fab.switch_links() if fab.switches[l.a].role == "tor"]
        rate = max(fab.link_mbit(l) for l in uplinks)
        self.stream_mbit = load * rate / per_uplink
        self.offered_mbit = load * rate * len(uplinks)
        for a, b in pairs if load else []:
            for src, dst in zip(fab.hosts[a].nics, fab.hosts[b].nics):
                parallel, dport = streams * len(src.ports), port_base + len(self.flows)
                self.flows.append(traffic.Flow(src, dst, dport=dport, parallel=parallel,
                                               sport=cport_base(emu, src, dst, parallel, dport)))

    def __enter__(self) -> Background:
        try:
            for flow in self.flows:
                self.servers.append((flow.dst.host, traffic.start_server(self.emu, flow.dst, flow.dport)))
            for flow in self.flows:
                self.clients.append(self.start_client(flow))
        except BaseException:
            self.__exit__()
            raise
        return self

    def start_client(self, flow: traffic.Flow) -> traffic.Client:
        """An iperf3 client paced by the kernel (--fq-rate, as the job's connections are): with -b
        iperf3 writes 128 KB blocks when behind, bursts that overflow a 48 KB queue and cost the
        job losses at loads the uplink has room for (docs/claims.md, C7)."""
        out = self.emu.state.file(f"iperf3-bg-{flow.src.name}-{flow.dport}.json")
        command = traffic.client_command(flow, self.seconds) + f" --fq-rate {self.stream_mbit:.4f}M"
        proc = self.emu.net[flow.src.host].spawn(command, traffic.IPERF_MARKER, out=out)
        return traffic.Client(flow, proc, out)

    def wait_ready(self, tier2: Tier2) -> float:
        """Poll until the uplinks carry 70% of the offered load (at load 1 the background's TCP
        streams fill somewhat less than an uplink: C7's docs); the rate they carry (Mbit/s)."""
        if not self.flows:
            return 0.0
        seen = []

        def reached():
            seen.append(round(tier2.wire_mbit(), 1))
            ended = [c for c in self.clients if c.proc.poll() is not None]
            if ended:
                raise TestbedError(f"background iperf3 from {ended[0].flow.src.name} ended early: "
                                   + ended[0].out.read_text(errors="replace")[-300:])
            return seen[-1] >= 0.7 * self.offered_mbit and seen[-1]
        try:
            return wait_for("the background", reached, 20, 0)
        except TestbedError as e:
            raise TestbedError(f"{e}: the uplinks carried {seen} Mbit/s, offered "
                               f"{self.offered_mbit:g}") from None

    def __exit__(self, *exc) -> None:
        # a client that ended before the job did left the job without its background
        self.ran_throughout = all(c.proc.poll() is None for c in self.clients)
        traffic.stop_clients(self.emu, self.clients)
        for host, proc in self.servers:
            self.emu.net[host].stop(proc, traffic.IPERF_MARKER)
