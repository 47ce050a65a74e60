"""C9 miswiring: a miswired fabric answers every ping yet a rail loses most of its throughput;
the wiring check names the two cables before any traffic runs.

The paper (HPN lessons): rail-optimized plus dual-plane means thousands of cables with exact
ends; early builds were miswired, which "showed up as mysterious performance problems"; INT
probes that record switch and port at every hop are now compared with the blueprint before any
end-to-end test.

Scaled down: one HPN segment's two hosts (p0s0h0, p0s0h1) send to each other from every NIC (NIC
i to NIC i: rail-local traffic, one ToR hop in the blueprint), TCP with `streams` streams per
NIC whose client ports the host's bond spreads evenly over the NIC's two ports. The same fabric
is brought up twice: as the blueprint says, then with two host cables swapped (`up --miswire`).
On each, in this order: the wiring check (testbed/measure/wiring.py: a probe into every cable
end, postcards from the switches), ping between every NIC pair (the reachability check of `up
--check`), then the traffic, and counters on the ToR uplinks and the aggregation switches' core
links (bytes, bfifo backlog). Rates at `scale` 0.02 (a 200G port is 4 Mbit/s, a core link of
the 15:1 tier 0.53 Mbit/s): the highest scale that keeps a 2-core machine's CPU under its 90%
limit (above it a run is invalid; the CPU at each scale: docs/claims.md, C9).

`swap` picks the two cables:
- `plane` (default): host 0's rail-0 NIC port 0 and host 1's rail-0 NIC port 1 trade places
  on the rail's ToR pair, so host 0's NIC has both ports on the plane-1 ToR and host 1's both on
  the plane-0 ToR. HPN's ToRs learn each NIC where its ARP arrives, so every NIC stays
  reachable (ping passes), but the rail's traffic between the two hosts now takes the wrong ToR:
  the planes meet only at the core, and it queues on the 15:1 core links. (Our core joins the
  two planes; a real HPN core keeps them apart too, where this swap would cut the pair off
  instead of slowing it: the wiring check, which names the two cables, catches it either way.)
- `rail`: host 0's rail-0 and rail-1 port 0 swap ToRs: each rail's traffic detours over tier 2,
  whose links are as fast as a NIC's, so on an idle fabric nothing is lost (it would queue
  behind other traffic there).
- `SWITCH-ethN,SWITCH-ethM`: any two host-facing ToR ports of those two hosts. Swaps of
  switch-to-switch cables are refused: the routes follow the blueprint, so some pairs stop
  answering ping (`up --miswire ... --check` shows it), not the quiet miswiring of this claim.

The expectation follows the fabric: for every NIC pair, the max-flow over the paths the
controller routes (shortest paths to where the NIC's cables really end) bounds its throughput,
on the blueprint and as built; a pair whose bound falls to AFFECTED (half) or less must measure
at most its bound ratio + SLACK, every other pair must keep KEPT of its blueprint throughput, and
the highest tier the miswired paths climb (tier 2: ToR uplinks, tier 3: core links) must carry
at least SEEN of a port's rate where the blueprint fabric carries at most CLEAN of it.
The bound for the rail-0 pairs of `plane` is 0.27 (the four core links between the planes
against two ports); ECMP puts a NIC's four streams on fewer of them, so they measure below it.
What runs measured against these bars: docs/claims.md, C9.
"""
from __future__ import annotations

import time
from collections import defaultdict, deque
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from testbed.core.errors import ParamError
from testbed.emulation.build import Options
from testbed.emulation.factory import make_emulation
from testbed.measure import checks, validity
from testbed.measure import wiring as wiring_check
from testbed.measure.meters import cpu_busy_fraction, port_bytes
from testbed.model import wiring
from testbed.model.routing import routes_to
from testbed.scenario import fault_harness as harness
from testbed.scenario import plots
from testbed.scenario.base import Judgement, Scenario, verdict
from testbed.scenario.knobs import Knobs
from testbed.workload import traffic
from testbed.workload.hashports import cport_base

A, B = harness.BUSY, harness.PEER    # two hosts of one segment: rail-local traffic stays under the ToRs
SWAPS = ("plane", "rail")
AFFECTED = 0.5    # a pair whose bound (miswired / blueprint) is at most this: the model says it loses
SLACK = 0.15      # measured ratio above the bound ratio allowed (the blueprint run reaches ~93% of line)
KEPT = 0.75       # of its blueprint throughput, a pair the model says keeps its paths' capacity
SEEN = 0.10       # of a port's rate: traffic on the tier the miswired paths climb to
CLEAN = 0.02      # of a port's rate: what that tier carries on the blueprint fabric


@dataclass(frozen=True)
class MiswiringKnobs(Knobs):
    swap: str = "plane"
    seconds: float = 8.0
    streams: int = 4
    QUICK: ClassVar[dict] = {"seconds": 4.0}
    BOUNDS: ClassVar[dict] = {"seconds": (2.0, 120.0, "s of traffic"),
                              "streams": (2, 32, "TCP streams per NIC, spread over its ports")}
    HELP: ClassVar[dict] = {"swap": "which two cables: plane, rail, or SWITCH-ethN,SWITCH-ethM (host-facing)",
                            "seconds": "s of traffic (after 1 s of slow start, not counted)",
                            "streams": "TCP streams per NIC"}

    def rules(self) -> None:
        if self.swap not in SWAPS and "," not in self.swap:
            raise ParamError(f"swap={self.swap!r}: choose plane, rail or SWITCH-ethN,SWITCH-ethM")


# ---- the model: where the cables end, and what the routes over them can carry ----

def swap_ports(fab, swap: str) -> str:
    """The `--miswire` pair of switch ports a named swap means."""
    if swap not in SWAPS:
        return swap
    a0 = fab.hosts[A].nics[0]
    other = fab.hosts[B].nics[0].ports[1] if swap == "plane" else fab.hosts[A].nics[1].ports[0]
    return f"{fab.host_link(a0.ports[0]).b_intf},{fab.host_link(other).b_intf}"


def cabled_at(fab, swaps) -> dict[str, tuple[str, int]]:
    """Host port -> the (switch, port) its cable really ends at."""
    out = {}
    for x, y in wiring.miswire(fab, swaps):
        for end, far in ((x, y), (y, x)):
            if end[0] in fab.hosts:
                out[end[1]] = far
    return out


def miswired_cables(fab, swaps) -> list[list[str]]:
    """The cables as built that the blueprint does not have, by their ends' names (what the
    wiring check must name)."""
    blueprint = {frozenset(wiring.ends(fab, link)) for link in fab.links}
    return sorted(sorted(wiring.name(e) for e in cable) for cable in wiring.miswire(fab, swaps)
                  if frozenset(cable) not in blueprint)


def max_flow(cap: dict, s: str, t: str) -> float:
    """Edmonds-Karp on {u: {v: capacity}}."""
    residual = defaultdict(lambda: defaultdict(float))
    for u, vs in cap.items():
        for v, c in vs.items():
            residual[u][v] += c
    total = 0.0
    while True:
        parent, queue = {s: None}, deque([s])
        while queue and t not in parent:
            u = queue.popleft()
            for v, c in list(residual[u].items()):
                if c > 1e-9 and v not in parent:
                    parent[v] = u
                    queue.append(v)
        if t not in parent:
            return total
        path, v = [], t
        while parent[v] is not None:
            path.append((parent[v], v))
            v = parent[v]
        push = min(residual[u][v] for u, v in path)
        for u, v in path:
            residual[u][v] -= push
            residual[v][u] += push
        total += push


def pair_model(fab, at: dict, src, dst) -> tuple[float, int]:
    """(the most src can send to dst over the routes the controller computes toward where dst's
    cables end, in Mbit/s; the highest tier those routes climb)."""
    rate = {(l.b, l.b_port): fab.link_mbit(l) for l in fab.links}
    rate.update({(l.a, l.a_port): fab.link_mbit(l) for l in fab.switch_links()})
    nbr = {(sw, port): other for sw, ports in fab.adjacency().items() for port, other, _ in ports}
    routes = {r.switch: r for r in routes_to(fab, dst.ip, dst.mac, [at[p] for p in dst.ports])}
    cap: dict = defaultdict(lambda: defaultdict(float))
    for p in src.ports:
        cap["src"][at[p][0]] += fab.link_mbit(fab.host_link(p))
    for sw, r in routes.items():
        for port in r.ports:
            cap[sw]["dst" if r.deliver_mac else nbr[(sw, port)]] += rate[(sw, port)]
    seen, queue = set(cap["src"]), deque(cap["src"])
    while queue:
        for v in cap.get(queue.popleft(), {}):
            if v != "dst" and v not in seen:
                seen.add(v)
                queue.append(v)
    return round(max_flow(cap, "src", "dst"), 3), max(fab.switches[sw].tier for sw in seen)


def pairs(fab) -> list[tuple]:
    """NIC i of each host to NIC i of the other, both ways."""
    return [(s, d) for x, y in ((A, B), (B, A)) for s, d in zip(fab.hosts[x].nics, fab.hosts[y].nics)]


def label(src, dst) -> str:
    return f"{src.name} -> {dst.name}"


def model(fab, swaps) -> dict:
    """Per pair: its bound and tier on the blueprint and as built, and the bound's ratio."""
    blueprint, built = cabled_at(fab, []), cabled_at(fab, swaps)
    out = {}
    for src, dst in pairs(fab):
        bound, tier = pair_model(fab, blueprint, src, dst)
        bound_m, tier_m = pair_model(fab, built, src, dst)
        out[label(src, dst)] = {"rail": src.rail, "line_mbps": fab.line_mbit(src), "bound_mbps": bound,
                                "bound_miswired_mbps": bound_m, "tier": tier, "tier_miswired": tier_m,
                                "ratio": round(bound_m / bound, 3) if bound else 0.0}
    return out


# ---- one bring-up: the wiring check, ping, then the traffic ----

def tier_intfs(fab) -> dict[int, list[str]]:
    """The interfaces of pod 0 (where the two hosts are) whose transmitted bytes climbed to tier 2
    (ToR uplinks) and tier 3 (the aggregation switches' core links)."""
    up = {2: [], 3: []}
    for l in fab.switch_links():
        lower = fab.switches[l.a]
        if lower.tier in (1, 2) and lower.pod == fab.hosts[A].pod:
            up[lower.tier + 1].append(l.a_intf)
    return up


def measure_traffic(emu, knobs: MiswiringKnobs) -> dict:
    """The TCP flows of every pair at once; what climbed to each tier (byte counters before and
    after) and the core links' queues (sampled: the light part of a Sampler, on a few ports)."""
    fab, seconds = emu.fabric, knobs.seconds
    flows = []
    for n, (src, dst) in enumerate(pairs(fab)):
        dport = 5301 + n
        cport = cport_base(emu, src, dst, knobs.streams, dport)
        flows.append(traffic.Flow(src, dst, dport=dport, sport=cport, parallel=knobs.streams))
    for flow in flows:
        traffic.start_server(emu, flow.dst, flow.dport)
    tiers = tier_intfs(fab)

    def run():
        clients = [traffic.start_client(emu, f, seconds, server_output=True) for f in flows]
        return [traffic.wait_client(emu, c, seconds + 20) for c in clients]
    before, t0 = port_bytes(emu, tiers[2] + tiers[3]), time.monotonic()
    with emu.sampler(tiers[3], interval=0.25) as s:
        results, busy = cpu_busy_fraction(run)
    after, elapsed = port_bytes(emu, tiers[2] + tiers[3]), time.monotonic() - t0

    def mbps(intfs):
        return round(sum(after[i] - before[i] for i in intfs) * 8 / 1e6 / elapsed, 2)
    queue = max((s.mean_queue(i, start=1.0) for i in tiers[3]), default=0.0)
    return {"pairs_mbps": {label(f.src, f.dst): round(traffic.received_mbps(r, warm=1.0), 2)
                           for f, r in zip(flows, results)},
            "tier2_mbps": mbps(tiers[2]), "tier3_mbps": mbps(tiers[3]),
            "core_queue_kb": round(queue / 1000, 1), "cpu_busy": round(busy, 3)}


def check_figures(check: checks.Check, t: float) -> dict:
    return {"passed": check.passed, "detail": check.detail, "at_s": round(t, 2),
            "named": sorted(sorted(w["cable"]) for w in check.figures.get("wrong", []))}


def bring_up(fab, miswire: tuple[str, ...], knobs: MiswiringKnobs, servers=()) -> dict:
    """Up (`miswire`: "PORT_A,PORT_B" pairs; on `servers`, none: this machine), then in order:
    wiring check, ping every NIC pair, the traffic (times since up). OVS's send buffer raised on
    both fabrics: the miswired paths fill the core's queues, and the one buffer all switch ports
    share would drop the frames of pairs the miswiring does not touch too (docs/claims.md, C9)."""
    with make_emulation(fab, Options(miswire=miswire, send_buffer=True), servers=servers) as emu:
        t0 = time.monotonic()
        wired = checks.guarded("wiring", wiring_check.check, emu)
        t_wired = time.monotonic() - t0
        pinged = checks.guarded("reachability", checks.reachability, emu)
        t_pinged = time.monotonic() - t0
        out = {"wiring": check_figures(wired, t_wired), "ping": check_figures(pinged, t_pinged),
               "ping_pairs": pinged.figures.get("pairs", 0), "ping_failed": pinged.figures.get("failed", 0),
               "traffic_from_s": round(time.monotonic() - t0, 2)}
        out.update(measure_traffic(emu, knobs))
        out["setup"] = emu.describe()
        return out


class Miswiring(Scenario, name="miswiring", claim="C9", tour=True):
    title = "miswiring: every ping answers, a rail slows down; the wiring check names the cables"
    paper = ("HPN lessons: early builds were miswired, which showed up as mysterious performance "
             "problems; INT probes record switch and port at every hop and are compared with the "
             "blueprint before any end-to-end test")
    families = ("hpn",)
    base: ClassVar[dict] = {"scale": 0.02}     # 200G -> 4 Mbit/s: see the docstring
    Knobs = MiswiringKnobs

    def swaps(self, fab) -> list:
        return wiring.parse_swaps(fab, [swap_ports(fab, self.knobs.swap)])

    def meaningful(self) -> None:
        fab = self.fabric()
        harness.needs_peer(self)
        if self.knobs.swap == "plane" and fab.params.single_tor:
            self.refuse("swap=plane swaps cables across a rail's ToR pair: it needs dual-ToR")
        if self.knobs.swap == "rail" and fab.params.nics < 2:
            self.refuse("swap=rail swaps the cables of two rails: it needs nics >= 2")
        try:
            swaps = self.swaps(fab)
        except ParamError as e:
            self.refuse(f"swap={self.knobs.swap}: {e}")
        hosts = {A, B}
        for port in (p for pair in swaps for p in pair):
            far = wiring.cable_at(fab, port)
            if far.a not in hosts:
                self.refuse(f"swap={self.knobs.swap}: {port[0]}-eth{port[1]} is not cabled to {A} or {B} "
                            "(host cables only: a swapped switch-to-switch cable leaves the routes of "
                            "the blueprint pointing at the wrong switch, so ping finds it)")
        m = model(fab, swaps)
        cut = [k for k, v in m.items() if v["bound_miswired_mbps"] == 0]
        if cut:
            self.refuse(f"swap={self.knobs.swap}: {cut[0]} would have no path at all (ping would find "
                        "it), e.g. the planes meet only at a core: needs pods >= 2")
        if all(v["tier_miswired"] == v["tier"] and v["ratio"] >= 1 for v in m.values()):
            self.refuse(f"swap={self.knobs.swap}: changes no path between {A} and {B}")

    def run(self, quick: bool) -> dict:
        fab = self.fabric()
        swaps = self.swaps(fab)
        figures = {"setup": {"hosts": [A, B], "streams_per_nic": self.knobs.streams,
                             "seconds": self.knobs.seconds, "miswire": swap_ports(fab, self.knobs.swap),
                             "scale": fab.params.scale, "port_mbps": fab.link_mbit(fab.host_links()[0])},
                   "series": {}, "model": model(fab, swaps), "expected_named": miswired_cables(fab, swaps)}
        for key, built in (("blueprint", ()), ("miswired", (swap_ports(fab, self.knobs.swap),))):
            figures[key] = bring_up(fab, built, self.knobs, self.servers)
            figures["setup"][key] = figures[key].pop("setup")
        return figures

    def judge(self, figures: dict) -> Judgement:
        m, bp, mis = figures["model"], figures["blueprint"], figures["miswired"]
        kept = {k: harness.ratio(mis["pairs_mbps"][k], bp["pairs_mbps"][k], 0.0) for k in m}
        affected = [k for k, v in m.items() if v["ratio"] <= AFFECTED]
        pairs_ok = all(kept[k] <= m[k]["ratio"] + SLACK if k in affected else kept[k] >= KEPT for k in m)
        top = max(v["tier_miswired"] for v in m.values())
        # one host port's rate (older records: half a dual-ported NIC's line)
        port = figures["setup"].get("port_mbps", min(v["line_mbps"] for v in m.values()) / 2)
        climbed = max(v["tier"] for v in m.values()) < top
        on_top = {2: "tier2_mbps", 3: "tier3_mbps"}.get(top)
        seen = not climbed or (mis[on_top] >= SEEN * port and bp[on_top] <= CLEAN * port)
        named = sorted(map(sorted, mis["wiring"]["named"])) == sorted(map(sorted, figures["expected_named"]))
        first = (mis["wiring"]["at_s"] <= mis["traffic_from_s"]
                 and mis["wiring"]["at_s"] <= mis["ping"]["at_s"])
        checks_ok = (bp["wiring"]["passed"] and named and first
                     and mis["ping"]["passed"] and bp["ping"]["passed"])
        saturated = all(validity.kept_up(bp["pairs_mbps"][k], v["line_mbps"]) for k, v in m.items())
        ok = checks_ok and pairs_ok and seen
        worst = min(m, key=lambda k: kept[k])
        tier_name = {2: "tier 2 (ToR uplinks)", 3: "the core links"}.get(top, f"tier {top}")
        return Judgement(
            verdict(ok, saturated),
            expectation=self.expectation(figures, affected, tier_name, climbed),
            measured=(f"miswired ({figures['setup']['miswire']}): ping {mis['ping']['detail']}; wiring check "
                      f"{mis['wiring']['at_s']} s after bring-up, before the first ping "
                      f"({mis['ping']['at_s']} s) and traffic ({mis['traffic_from_s']} s): "
                      f"{mis['wiring']['detail']}; blueprint fabric: {bp['wiring']['detail']}. Throughput "
                      "blueprint -> miswired: " + "; ".join(
                          f"{k} {bp['pairs_mbps'][k]} -> {mis['pairs_mbps'][k]} Mbit/s (kept {kept[k]:.0%}, "
                          f"bound {m[k]['ratio']:.0%})" for k in m)
                      + f"; tier 2 carried {bp['tier2_mbps']} -> {mis['tier2_mbps']} Mbit/s, the core links "
                      f"{bp['tier3_mbps']} -> {mis['tier3_mbps']} Mbit/s (mean queue of the busiest "
                      f"{bp['core_queue_kb']} -> {mis['core_queue_kb']} KB); CPU busy {bp['cpu_busy']:.0%}, "
                      f"{mis['cpu_busy']:.0%}"),
            derived={"kept": kept, "named_exactly": named, "affected": affected},
            headline=(f"ping {mis['ping_pairs'] - mis['ping_failed']}/{mis['ping_pairs']}, "
                      f"{worst.split(' ->')[0]} kept {kept[worst]:.0%} (bound {m[worst]['ratio']:.0%}); "
                      f"check named {len(mis['wiring']['named'])} cables" + (" exactly" if named else "")),
            busy=(bp["cpu_busy"], mis["cpu_busy"]))

    def expectation(self, figures: dict, affected: list, tier_name: str, climbed: bool) -> str:
        m = figures["model"]
        losing = "; ".join(f"{k} at most {m[k]['ratio'] + SLACK:.0%} of its blueprint throughput "
                           f"(max-flow bound {m[k]['bound_miswired_mbps']} of {m[k]['bound_mbps']} Mbit/s)"
                           for k in affected) or "no pair loses capacity (the detour's links are as fast)"
        return (f"{A} and {B} send to each other from every NIC; cables {figures['setup']['miswire']} "
                f"swapped. Every NIC pair still answers ping (the ToRs learn each NIC where its ARP "
                f"arrives); the wiring check, run first, names exactly the cables "
                f"{'; '.join(' - '.join(c) for c in figures['expected_named'])}; {losing}; "
                f"{'every other pair' if affected else 'every pair'} keeps {KEPT:.0%}"
                + (f"; the miswired paths climb to {tier_name}, which must carry at least {SEEN:.0%} of a "
                   f"port's rate (at most {CLEAN:.0%} on the blueprint fabric)" if climbed else ""))

    def plot(self, result, path: Path) -> bool:
        """Per-pair throughput, blueprint vs miswired, with the model's bound; where the traffic
        went (tier 2, core); the cables the wiring check named."""
        f = result.figures
        fig, (ax, where) = plots.figure(self, result, ncols=2, size=(11, 5))
        names = list(f["model"])
        ticks = [k.replace(" -> ", "\n-> ") for k in names]
        plots.bars(ax, ticks, {"blueprint": [[f["blueprint"]["pairs_mbps"][k]] for k in names],
                               "miswired": [[f["miswired"]["pairs_mbps"][k]] for k in names]},
                   "TCP throughput (Mbit/s)")
        ax.scatter([i + 0.2 for i in range(len(names))],
                   [f["model"][k]["bound_miswired_mbps"] for k in names],
                   marker="_", s=400, color="black", zorder=4, label="miswired bound (max-flow)")
        plots.paper_value(ax, max(f["model"][k]["bound_mbps"] for k in names), "the blueprint's rate",
                          colour="dimgrey")
        ax.set_ylim(0, 1.5 * max(f["model"][k]["bound_mbps"] for k in names))     # the legend above the bars
        ax.legend(fontsize="small", loc="upper center", ncol=2)
        ax.tick_params(axis="x", labelsize=6)
        ax.set_title("each NIC pair", fontsize=9)
        plots.bars(where, ["tier 2 (ToR uplinks)", "core links"],
                   {v: [[f[v]["tier2_mbps"]], [f[v]["tier3_mbps"]]] for v in ("blueprint", "miswired")},
                   "traffic climbing to the tier (Mbit/s)")
        where.set_title(f"where it went; core queue {f['blueprint']['core_queue_kb']} -> "
                        f"{f['miswired']['core_queue_kb']} KB", fontsize=9)
        mis = f["miswired"]
        where.set_ylim(0, 1.6 * max(1.0, *(f[v][t] for v in ("blueprint", "miswired")
                                           for t in ("tier2_mbps", "tier3_mbps"))))
        note = (f"wiring check at {mis['wiring']['at_s']} s, before any traffic, named:\n"
                + "\n".join(" - ".join(c) for c in mis["wiring"]["named"])
                + f"\nping: {mis['ping_pairs'] - mis['ping_failed']}/{mis['ping_pairs']} NIC pairs answer")
        where.text(0.02, 0.97, note, transform=where.transAxes, va="top", fontsize=7,
                   bbox={"boxstyle": "round", "fc": "lightyellow", "alpha": 0.9})
        plots.save(fig, path)
        return True
