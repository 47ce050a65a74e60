"""C16 skeleton probing: probe only the paths a training job's flows take (its "skeleton") and
every fault on those paths is found, for a fraction of the probes a full mesh sends.

The paper (Alibaba SkeletonHunter, SIGCOMM'25): a job's traffic matrix is sparse (ring and tree
neighbours), so probing only the paths its flows use found failures with 98.2% precision and
99.3% recall at a fraction of full-mesh probing's cost.

Scaled down: a three-tier Clos (clos3); a job of `job_hosts` hosts (drawn at random) runs a ring,
NIC to the next host's NIC, each flow on a random source port (RoCE's UDP 4791). The skeleton
prober probes each flow's own 5-tuple (ECMP hashes it as it hashes the flow); the full mesh
probes every ordered NIC pair once, on a random 5-tuple each. Every probe's path is read from the
switches (ofproto/trace) and checked against the model's shortest paths before anything is
injected. Both probers then run at once, one probe per path every `interval` s, while `faults`
random faults come and go one after another, half on links the job's paths cross (in the
direction they cross them), half on links they do not: a link down (both directions, carrier
lost), a one-way drop (an nftables egress drop on one switch port: carrier stays up) or a drop
rule (an OpenFlow rule on one switch dropping what enters by one port). A path with `misses`
probes lost in a row is an alarm; an alarm is true when its path crosses the fault in place.
Each prober also localizes: it blames the links all its failing paths cross and none of its
healthy ones do, scored against the link the fault is on (scoring.py). All random choices (the
job, its ports, the mesh's, the faults' kinds, links and order) come from `seed` (0: a fresh one,
recorded in the setup; `--set seed=N` replays that plan).

The probe interval follows from the detection-time target: an alarm within DETECT_S = 0.1 s of a
silent fault, a tenth of the quick hold (1 s), so each fault is found early in its window, well
before it is repaired, and detection times stand clear of the tens of ms an injection takes. An
alarm needs `misses` probes lost in a row, and the fault can arrive just after a probe went
through: up to (misses + 1) intervals. So interval <= DETECT_S / (misses + 1) = 25 ms at misses =
3, and 20 ms is the round value under it (also the bound below which one prober process sending
the mesh's probes would set the pace on this machine). Three misses, not one: one lost datagram
is noise on an emulated link; three in a row at 20 ms are a fault.
"""
from __future__ import annotations

import math
import random
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from testbed.emulation.factory import make_emulation
from testbed.emulation.faults.inject import Faults, Handle
from testbed.emulation.trace import emulation_trace
from testbed.measure.meters import cpu_busy_fraction
from testbed.measure.probing import Probe, ProbeRun, lost_rounds
from testbed.model.routing import shortest_path_links
from testbed.scenario import plots
from testbed.scenario.base import Judgement, Scenario, verdict
from testbed.scenario.knobs import Knobs
from testbed.scenario.timeline import Schedule

from .scoring import quiet_loss, score

PAPER_PRECISION, PAPER_RECALL, PAPER_LOCALIZED = 0.982, 0.993, 0.957
KINDS = ("link-down", "one-way", "drop-rule")
SILENT = KINDS[1:]      # carrier stays up: only probes find them (a link down, the switches see)
JOB_DPORT, MESH_DPORT = 4791, 4792      # RoCE v2's UDP port for the job's flows
RECALL = 0.99       # of the faults on the job's paths the skeleton must find: all of them
PRECISION = 0.9     # of the skeleton's alarms that must be true
COST = 0.25         # the skeleton's probes per second, of the full mesh's, at most
DROP_COOKIE = 0xC16
PROBERS = ("skeleton", "full mesh")
DETECT_S = 0.1      # the detection-time target the default interval is derived from (docstring)


@dataclass(frozen=True)
class SkeletonKnobs(Knobs):
    job_hosts: int = 4
    faults: int = 10
    interval: float = 0.02
    misses: int = 3
    hold: float = 1.5
    gap: float = 1.0
    seed: int = 0
    QUICK: ClassVar[dict] = {"faults": 6, "hold": 1.0}
    BOUNDS: ClassVar[dict] = {"job_hosts": (2, 64, "hosts in the job's ring"),
                              "faults": (2, 40, "faults, one after another"),
                              "interval": (0.02, 1.0, "s between a path's probes"),
                              "misses": (1, 10, "probes lost in a row that raise an alarm"),
                              "hold": (0.2, 30.0, "s each fault stays"),
                              "gap": (0.3, 30.0, "s between faults"),
                              "seed": (0, 2**31 - 1, "0: a fresh seed, recorded")}
    HELP: ClassVar[dict] = {"job_hosts": "hosts the job runs on (a ring, NIC to NIC)",
                            "faults": "random faults, half on the job's paths, half off them",
                            "interval": "s between two probes of one path (both probers)",
                            "misses": "probes lost in a row that make an alarm",
                            "hold": "s each fault stays in place", "gap": "s between faults",
                            "seed": "random seed for the job, its ports and the faults (0: fresh)"}


# ---- the model: the job, the mesh, and the faults, from the seed ----

def job_probes(fab, k: SkeletonKnobs, rng: random.Random) -> list[Probe]:
    """A ring over `job_hosts` random hosts: NIC i of each host to NIC i of the next."""
    hosts = rng.sample(sorted(fab.hosts), k.job_hosts)
    sports = rng.sample(range(30000, 60000), k.job_hosts * max(len(fab.hosts[h].nics) for h in hosts))
    probes = []
    for a, b in zip(hosts, hosts[1:] + hosts[:1]):
        for src, dst in zip(fab.hosts[a].nics, fab.hosts[b].nics):
            probes.append(Probe(f"job{len(probes)}", src, sports[len(probes)], dst, JOB_DPORT))
    return probes


def mesh_probes(fab, rng: random.Random) -> list[Probe]:
    """Every ordered pair of NICs on different hosts, one random 5-tuple each."""
    pairs = [(s, d) for s in fab.nics() for d in fab.nics() if s.host != d.host]
    sports = rng.sample(range(20000, 30000), len(pairs))
    return [Probe(f"mesh{i}", s, sp, d, MESH_DPORT) for i, ((s, d), sp) in enumerate(zip(pairs, sports))]


def directed(fab) -> list[tuple[str, int]]:
    """Every switch-to-switch link in each direction, by the egress port (switch, port)."""
    return sorted([(l.a, l.a_port) for l in fab.switch_links()]
                  + [(l.b, l.b_port) for l in fab.switch_links()])


def affected(fab, kind: str, egress: tuple[str, int]) -> list[tuple[str, int]]:
    """The directions a fault on `egress` stops: both for a link down, one otherwise."""
    return [egress, tuple(fab.port_peer()[egress])] if kind == "link-down" else [egress]


def choose_faults(fab, used: set, count: int, rng: random.Random) -> list[dict]:
    """`count` faults on distinct links: ceil(count / 2) on the job's paths, the rest off them."""
    peer, chosen, cables = fab.port_peer(), [], set()
    for i in range(count):
        on_path = i < math.ceil(count / 2)
        kind = KINDS[1] if i == 0 else rng.choice(KINDS)     # one silent fault on a job path at least
        pool = [e for e in directed(fab) if frozenset((e, tuple(peer[e]))) not in cables
                and bool(set(affected(fab, kind, e)) & used) == on_path]
        if not pool:
            return []
        egress = rng.choice(pool)
        cables.add(frozenset((egress, tuple(peer[egress]))))
        chosen.append({"kind": kind, "egress": list(egress), "on_job_path": on_path, "silent": kind in SILENT,
                       "affects": [list(e) for e in affected(fab, kind, egress)]})
    rng.shuffle(chosen)
    return chosen


def in_model(fab, probe: Probe, egress: list) -> bool:
    """Does the traced path use only cables on the model's shortest paths?"""
    links = shortest_path_links(fab, probe.src, probe.dst)
    allowed = {(l.a, l.a_port) for l in links} | {(l.b, l.b_port) for l in links}
    return all(tuple(e) in allowed for e in egress)


# ---- the run: trace every path, then both probers while the faults come and go ----

def traced(emu, probe: Probe) -> list[list]:
    """The switch-to-switch egress ports the probe's 5-tuple leaves by, read from the switches."""
    peer = emu.fabric.port_peer()
    hops = emulation_trace(emu, probe.src, probe.dst, proto="udp", sport=probe.sport, dport=probe.dport)
    return [[h.switch, h.out_port] for h in hops
            if h.out_port is not None and peer[(h.switch, h.out_port)][0] in emu.fabric.switches]


def inject(emu, faults: Faults, fault: dict) -> Handle:
    """Put one fault of the plan in place (how long that took goes in its `injected_ms`)."""
    fab, (sw, port) = emu.fabric, fault["egress"]
    link = next(l for l in fab.switch_links() if (sw, port) in ((l.a, l.a_port), (l.b, l.b_port)))
    start = time.monotonic()
    if fault["kind"] == "link-down":
        handle = faults.link_down(link)
    elif fault["kind"] == "one-way":
        handle = faults.one_way(link, "up" if sw == link.a else "down")
    else:       # what enters the far switch by this cable is dropped there
        far, far_port = fab.port_peer()[(sw, port)]
        emu.ofctl("add-flow", far, f"cookie={DROP_COOKIE:#x},table=0,priority=65535,"
                                   f"in_port={far_port},actions=drop")
        handle = faults.add(f"drop rule on {far} port {far_port}",
                            lambda: emu.ofctl("del-flows", far, f"cookie={DROP_COOKIE:#x}/-1"))
    fault["injected_ms"] = round((time.monotonic() - start) * 1000)
    return handle


def play(emu, probes: list[Probe], plan: list[dict], k: SkeletonKnobs) -> tuple[dict, list]:
    """Both probers' rounds while each fault of `plan` is in place for `hold` s in turn; the
    prober's result and each fault's window (s since round 0)."""
    seconds = k.hold + len(plan) * (k.hold + k.gap)
    with ProbeRun(emu, probes, seconds, k.interval) as run, Faults(emu) as faults:
        schedule = Schedule()         # the timeline engine: each fault in place for `hold` s
        played = [schedule.fault(k.hold + i * (k.hold + k.gap), lambda f=fault: inject(emu, faults, f),
                                 k.hold)
                  for i, fault in enumerate(plan)]
        schedule.play(run.t0)
    return run.result, [[round(p.injected, 3), round(p.repaired, 3)] for p in played]


def share(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def located(loc: dict) -> str:
    """What a prober's blame came to (scoring.localize)."""
    return (f"blamed {loc['blamed_mean']} links a fault it saw (precision {share(loc['precision'])}, recall "
            f"{share(loc['recall'])}, exactly the faulty link(s) {share(loc['exact'])})")


def expectation(figures: dict, k: SkeletonKnobs) -> str:
    sk, mesh = (sum(1 for p in figures["probes"] if p["prober"] == x) for x in PROBERS)
    on = sum(1 for f in figures["faults"] if f["on_job_path"] and f.get("silent", True))
    downs = sum(1 for f in figures["faults"] if not f.get("silent", True))
    return (f"a ring of {k.job_hosts} hosts: the skeleton probes its {sk} flows' own 5-tuples, the full mesh "
            f"all {mesh} NIC pairs, each path every {k.interval * 1000:g} ms: the skeleton costs {sk}/{mesh} "
            f"= {sk / mesh:.0%} of the mesh's probes (at most {COST:.0%}). Of {len(figures['faults'])} "
            f"faults, {on} silent (carrier up) on links the job's paths cross: the skeleton finds every one "
            f"of them (recall >= {RECALL:.0%}; "
            f"paper {PAPER_RECALL:.1%}) within about {k.misses} to {k.misses + 1} intervals, with precision "
            f">= {PRECISION:.0%} (paper {PAPER_PRECISION:.1%}), and none off them; the mesh finds the faults "
            f"its random 5-tuples happen to cross. The {downs} links down are not counted in recall: the "
            f"switches see carrier go and their select groups skip the dead port at once, so probes lose "
            f"little or nothing. Each prober's blame (the links all its failing paths cross and no healthy "
            f"one does) is reported against the faulty link, not judged: a skeleton of few paths exonerates "
            f"few links (paper: 95.7% localized)")


class SkeletonProbing(Scenario, name="skeleton-probing", claim="C16", tour=True):
    title = "skeleton probing: the job's own paths, against the full mesh"
    paper = ("Alibaba SkeletonHunter (SIGCOMM'25): probing only the paths training traffic uses found "
             "failures with 98.2% precision and 99.3% recall, at a fraction of full-mesh probing's cost")
    families = ("clos3",)
    Knobs = SkeletonKnobs

    def meaningful(self) -> None:
        fab, k = self.fabric(), self.knobs
        if k.job_hosts >= len(fab.hosts):
            self.refuse(f"job_hosts={k.job_hosts}: the fabric has {len(fab.hosts)} hosts; a job on all "
                        "of them leaves no part of the mesh unused, so nothing to save")
        if len(fab.switch_links()) < k.faults:
            self.refuse(f"faults={k.faults}: the fabric has {len(fab.switch_links())} switch links, "
                        "one fault per link")
        if k.misses * k.interval >= k.hold / 2:
            self.refuse(f"misses x interval = {k.misses * k.interval:g} s: a fault held {k.hold:g} s "
                        "must outlast twice the time an alarm takes")

    def run(self, quick: bool) -> dict:
        k = self.knobs
        seed = k.seed or secrets.randbelow(2**31 - 2) + 1
        rng = random.Random(seed)
        fab = self.fabric()
        job, mesh = job_probes(fab, k, rng), mesh_probes(fab, rng)
        with make_emulation(fab, servers=self.servers) as emu:
            paths = {p.name: traced(emu, p) for p in job + mesh}
            used = {tuple(e) for p in job for e in paths[p.name]}
            plan = choose_faults(fab, used, k.faults, rng)
            (result, windows), busy = cpu_busy_fraction(lambda: play(emu, job + mesh, plan, k))
            setup = emu.describe()
        index = {name: i for i, name in enumerate(result["names"])}
        probes = [{"name": p.name, "prober": PROBERS[0] if p in job else PROBERS[1], "src": p.src.name,
                   "dst": p.dst.name, "sport": p.sport, "dport": p.dport, "path": paths[p.name],
                   "in_model": in_model(fab, p, paths[p.name]), "sent": result["sent"][index[p.name]],
                   "lost": lost_rounds(result["received"][index[p.name]], result["rounds"])}
                  for p in job + mesh]
        return {"probes": probes, "faults": plan, "windows": windows, "rounds": result["rounds"],
                "seconds": round(result["rounds"] * k.interval, 3), "late_max_s": result["late_max_s"],
                "cpu_busy": round(busy, 3),
                "setup": {"seed": seed, "job": [p.src.host for p in job], "emulation": setup,
                          "job_dport": JOB_DPORT, "mesh_dport": MESH_DPORT}, "series": {}}

    def judge(self, figures: dict) -> Judgement:
        k = self.knobs_of(figures)
        faults = figures["faults"]
        sk, mesh = score(figures, PROBERS[0], k), score(figures, PROBERS[1], k)
        cost = round(sk["probes_per_s"] / mesh["probes_per_s"], 3) if mesh["probes_per_s"] else 1.0
        confirmed = all(p["in_model"] for p in figures["probes"])
        loss = quiet_loss(figures, k)
        on = sum(1 for f in faults if f["on_job_path"] and f.get("silent", True))
        valid = (figures["late_max_s"] <= k.interval and confirmed
                 and loss <= 0.01 and on > 0 and not all(f["on_job_path"] for f in faults))
        ok = sk["recall_job"] >= RECALL and sk["precision"] >= PRECISION and cost <= COST
        why = "" if valid else (f"; invalid: prober up to {figures['late_max_s'] * 1000:.0f} ms late, "
                                f"{loss:.1%} of probes lost with no fault in place, traces "
                                f"{'in' if confirmed else 'NOT all in'} "
                                f"the model, {on} of {len(faults)} faults silent and on the job's paths")

        def said(name: str, s: dict) -> str:
            return (f"{name}: {s['paths']} paths, {s['probes_per_s']:g} probes/s, {s['alarms']} alarms "
                    f"({s['false_alarms']} false: precision {s['precision']:.0%}), found "
                    f"{s['recall_job']:.0%} of the {on} silent faults on the job's paths and "
                    f"{s['recall_all']:.0%} of "
                    f"all {len(faults)}, detection {s['detect_ms_median']} ms median, {s['detect_ms_max']} "
                    f"max; {located(s['localized'])}")
        return Judgement(
            verdict(ok, valid), expectation=expectation(figures, k),
            measured=(f"seed {figures['setup'].get('seed')}; faults "
                      + ", ".join(f"{f['kind']} {f['egress'][0]}:{f['egress'][1]}"
                                  + (" (job)" if f["on_job_path"] else "")
                                  + (f" ({f['injected_ms']} ms to inject)" if "injected_ms" in f
                                     else "") for f in faults)
                      + f"; {said('skeleton', sk)}; {said('full mesh', mesh)}; skeleton cost {cost:.0%} of "
                        f"the "
                      f"mesh's; CPU busy {figures['cpu_busy']:.0%}" + why),
            derived={"skeleton": sk, "full_mesh": mesh, "cost_ratio": cost, "quiet_loss": loss},
            headline=(f"skeleton {sk['probes_per_s']:g} probes/s ({cost:.0%} of the mesh's), found "
                      f"{sk['recall_job']:.0%} of job-path faults, precision {sk['precision']:.0%}; "
                      f"mesh found {mesh['recall_all']:.0%} of all; localized exactly: skeleton "
                      f"{share(sk['localized']['exact'])}, mesh {share(mesh['localized']['exact'])}"),
            busy=[figures["cpu_busy"]])

    def plot(self, result, path: Path) -> bool:
        f = result.figures
        scores = {"skeleton": f["skeleton"], "full mesh": f["full_mesh"]}
        fig, (cost, quality, when) = plots.figure(self, result, ncols=3, size=(16, 4.8))
        plots.bars(cost, ["probes per second"], {n: [[s["probes_per_s"]]] for n, s in scores.items()},
                   "probes/s")
        cost.set_title(f"cost: the skeleton sends {f['cost_ratio']:.0%} of the mesh's probes", fontsize=9)
        plots.bars(quality, ["precision", "recall\n(job's paths)", "recall\n(all faults)", "blame\nprecision",
                             "blame\nrecall", "localized\nexactly"],
                   {n: [[100 * s["precision"]], [100 * s["recall_job"]], [100 * s["recall_all"]]]
                    + [[100 * (s["localized"][x] or 0.0)] for x in ("precision", "recall", "exact")]
                    for n, s in scores.items()}, "% (as the paper states them)")
        plots.paper_value(quality, 100 * PAPER_PRECISION, "precision 98.2%", style=0)
        plots.paper_value(quality, 100 * PAPER_RECALL, "recall 99.3%", style=1)
        plots.paper_value(quality, 100 * PAPER_LOCALIZED, "95.7% localized", style=2, colour="grey")
        quality.set_ylim(0, 135)
        quality.legend(fontsize="x-small", loc="upper right", ncol=2)
        for k, (name, s) in enumerate(scores.items()):
            xs = [int(i) for i in s["detect_ms"]]
            when.scatter(xs, [s["detect_ms"][str(i)] for i in xs], color=plots.COLOURS[k], label=name,
                         marker="o" if k == 0 else "x", zorder=3)
        for i, fault in enumerate(f["faults"]):
            when.annotate(("job: " if fault["on_job_path"] else "") + fault["kind"], (i, 0), rotation=90,
                          fontsize=6, xytext=(0, 3), textcoords="offset points", va="bottom")
        plots.counts(when, "x")         # a fault's index: 0, 1, 2, ..., never 0.5
        when.set_xlabel("fault (in the order injected)")
        when.set_ylabel("time to detect (ms)")
        when.set_ylim(bottom=0)
        when.legend(fontsize="small")
        plots.save(fig, path)
        return True
