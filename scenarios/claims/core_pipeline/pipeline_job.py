"""The training job of core-pipeline (claim C8), pure: where its ranks sit, the bytes of one step,
and the step time a fluid model of the fabric predicts for them.

The job spans segment 0 of pods 0 and 1 with two pipeline stages (PP 2); a host is one TP group
(its GPUs, one per NIC: TP stays on NVLink, here the intra-host relay); the hosts of a stage
form its DP group (one ring per rail). Two placements:
    pp-across   HPN's: stage 0 is pod 0, stage 1 is pod 1; DP inside each pod, only PP crosses
    dp-across   each stage takes half the hosts of each pod: DP rings cross the core, PP stays inside

One step is three phases in sequence: TP AllReduce (relay), PP send (every GPU of stage 0 to its
peer in stage 1), DP AllReduce (ring per rail, reduce-scatter and all-gather as one phase: same
ring neighbours, each rank sends 2(n-1)/n of its gradients). Sizes are bytes per GPU per step.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from testbed.core.errors import ParamError
from testbed.model.fabric import Fabric
from testbed.workload.collectives import Transfer

PLACEMENTS = ("pp-across", "dp-across")
PHASES = ("TP", "PP", "DP")
PACE = 0.9         # senders paced at 90% of their NIC's rate (a lossless fabric's stand-in)
PAPER_MB = {"tp": 560.0, "dp": 5500.0, "pp": 6.0}    # HPN Table 3, GPT-3 175B at TP8-PP8-DP512


@dataclass(frozen=True)
class Sizes:
    """Bytes per GPU per step of each parallelism."""
    tp: int
    pp: int
    dp: int

    @classmethod
    def scaled(cls, tp_mb: float, pp_mb: float, dp_mb: float, divisor: float) -> Sizes:
        """The paper's MB divided by `divisor`: every ratio between them kept."""
        return cls(*(max(1, round(mb * 1e6 / divisor)) for mb in (tp_mb, pp_mb, dp_mb)))


def job_hosts(fab: Fabric) -> tuple[list[str], list[str]]:
    """The hosts of segment 0 in pod 0 and in pod 1."""
    pods = [[h.name for h in fab.hosts.values() if h.pod == pod and h.coords[1] == 0] for pod in (0, 1)]
    if not all(pods) or len(pods[0]) != len(pods[1]):
        raise ParamError("needs two pods with equally many hosts in segment 0")
    return pods[0], pods[1]


def stages(fab: Fabric, placement: str) -> list[list[str]]:
    """The two pipeline stages (lists of hosts; host i of stage 0 feeds host i of stage 1)."""
    pod0, pod1 = job_hosts(fab)
    if placement == "pp-across":
        return [pod0, pod1]
    if placement == "dp-across":
        half = len(pod0) // 2
        if half == 0 or len(pod0) % 2:
            raise ParamError(f"hosts={len(pod0)}: dp-across splits each pod's hosts between the two stages")
        # interleaved, so that a ring crosses between the pods at every other step
        return [[h for pair in zip(pod0[:half], pod1[:half]) for h in pair],
                [h for pair in zip(pod0[half:], pod1[half:]) for h in pair]]
    raise ParamError(f"placement {placement!r}: choose one of {', '.join(PLACEMENTS)}")


def _ring(members: list, share: int, phase: int) -> list[Transfer]:
    """Every member sends `share` bytes to its ring successor."""
    n = len(members)
    return [Transfer(m, members[(k + 1) % n], share, phase) for k, m in enumerate(members)] if n > 1 else []


def allreduce_share(size: int, n: int) -> int:
    """Bytes a rank sends in a ring AllReduce of `size` over n ranks: 2(n-1)/n x size."""
    return round(2 * (n - 1) * size / n) if n > 1 else 0


def step(fab: Fabric, placement: str, sizes: Sizes) -> list[list[Transfer]]:
    """The transfers of one training step, phase by phase (PHASES)."""
    st = stages(fab, placement)
    tp, pp, dp = [], [], []
    for stage in st:
        for host in stage:
            nics = fab.hosts[host].nics
            tp += _ring(list(nics), allreduce_share(sizes.tp, len(nics)), 0)
        for rail in range(len(fab.hosts[stage[0]].nics)):
            ring = [fab.hosts[h].nics[rail] for h in stage]
            dp += _ring(ring, allreduce_share(sizes.dp, len(ring)), 2)
    for a, b in zip(st[0], st[1]):
        for nic in fab.hosts[a].nics:
            pp.append(Transfer(nic, fab.hosts[b].nics[nic.index], sizes.pp, 1))
    return [tp, pp, dp]


# ---- the fluid model: a phase lasts as long as its busiest resource needs ----------------

def capacities(fab: Fabric, pace: float = PACE) -> dict[str, float]:
    """Mbit/s of each shared resource a transfer can cross: every NIC's sending and receiving
    side (its ports together, at the senders' pace), and per pod its tier-1 uplinks and its
    core uplinks (each way)."""
    caps: dict[str, float] = {}
    for nic in fab.nics():
        caps[f"tx {nic.name}"] = caps[f"rx {nic.name}"] = pace * fab.line_mbit(nic)
    for l in fab.switch_links():
        lower, upper = fab.switches[l.a], fab.switches[l.b]
        tier = {"agg": "tier-1", "core": "core"}.get(upper.role)
        if tier and lower.pod is not None:
            for way in ("up", "down"):
                key = f"{tier} {way} pod {lower.pod}"
                caps[key] = caps.get(key, 0.0) + fab.link_mbit(l)
    return caps


def loads(fab: Fabric, transfers: list[Transfer]) -> dict[str, int]:
    """Bytes each resource carries in a phase (relay transfers stay inside their host)."""
    load: dict[str, int] = defaultdict(int)
    for t in transfers:
        if t.relay:
            continue
        load[f"tx {t.src.name}"] += t.nbytes
        load[f"rx {t.dst.name}"] += t.nbytes
        a, b = fab.hosts[t.src.host].pod, fab.hosts[t.dst.host].pod
        if a != b:
            for tier in ("tier-1", "core"):
                load[f"{tier} up pod {a}"] += t.nbytes
                load[f"{tier} down pod {b}"] += t.nbytes
    return dict(load)


def core_phases(fab: Fabric, placement: str, sizes: Sizes) -> list[str]:
    """The phases of a step whose bytes cross the core (transfers between pods): the only ones
    the core's oversubscription can slow; the others meet the same links whatever the core."""
    return [name for name, transfers in zip(PHASES, step(fab, placement, sizes))
            if any(resource.startswith("core ") for resource in loads(fab, transfers))]


def phase_time(fab: Fabric, transfers: list[Transfer], caps: dict | None = None) -> tuple[float, str]:
    """(seconds, the bottleneck) of a phase if every resource ran full until its bytes were through."""
    caps = caps or capacities(fab)
    times = {r: b * 8 / 1e6 / caps[r] for r, b in loads(fab, transfers).items()}
    if not times:
        return 0.0, "NVLink (relay)"
    worst = max(times, key=times.get)
    return times[worst], worst


def predicted_step(fab: Fabric, placement: str, sizes: Sizes) -> dict:
    """Each phase's predicted seconds and bottleneck, and the step's total."""
    caps = capacities(fab)
    phases = {}
    for name, transfers in zip(PHASES, step(fab, placement, sizes)):
        seconds, bottleneck = phase_time(fab, transfers, caps)
        phases[name] = {"seconds": round(seconds, 4), "bottleneck": bottleneck}
    return {"phases": phases, "step_s": round(sum(p["seconds"] for p in phases.values()), 4)}
