"""A scenario of your own, as a plug-in: `hpn-testbed list --custom examples/custom_scenario.py`
shows it, `sudo hpn-testbed run ecmp-spread --custom examples/custom_scenario.py --quick` runs it
and gives a verdict (`run ecmp-spread --help --custom ...` lists its knobs).

The claim, in the form every scenario has: "ECMP spreads the connections of one job over both
spines of a leaf/spine plane: each spine carries at least `min_share` of the bytes the sending
leaf sends up". The two steps:
- `run(quick)` brings the fabric up (make_emulation: torn down when the block ends), drives
  traffic (one iperf3 client with `connections` parallel TCP connections, each its own source
  port, hence its own hash) and measures (the bytes each of the leaf's uplinks sent);
- `judge(figures)` is pure: the verdict and the prose from those numbers alone, so a recorded
  ecmp-spread.json can be judged again, and unit tests can call it with made-up figures.

`register` checks it like ours before `list` shows it: the name, the claim, knobs typed and
ranged with their help, a judge of its own, and the defaults (full and quick) against the fabric
model; a problem is one line naming this file, exit status 2.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from scenarios import register
from testbed.emulation.factory import make_emulation
from testbed.measure.meters import port_bytes
from testbed.scenario.base import Judgement, Scenario, verdict
from testbed.scenario.knobs import Knobs
from testbed.workload.traffic import Flow, run_flows


@dataclass(frozen=True)
class SpreadKnobs(Knobs):
    connections: int = 16
    seconds: float = 4.0
    min_share: float = 0.1
    QUICK: ClassVar[dict] = {"connections": 8, "seconds": 2.0}
    BOUNDS: ClassVar[dict] = {"connections": (2, 64, "TCP connections of the one client"),
                              "seconds": (1.0, 60.0, "seconds"),
                              "min_share": (0.0, 0.5, "a share of two spines")}
    HELP: ClassVar[dict] = {"connections": "parallel TCP connections (iperf3 -P)",
                            "seconds": "s of traffic",
                            "min_share": "the least share of the bytes each spine must carry"}


class EcmpSpread(Scenario, name="ecmp-spread", claim="U1"):
    title = "ECMP spreads one job's connections over both spines"
    paper = "(our own claim) hashing the 5-tuple puts every spine to work"
    families = ("mpft",)
    base: ClassVar[dict] = {"planes": 1, "leaves": 2, "spines": 2, "hosts_per_leaf": 1,
                            "scale": 0.02}
    fixed: ClassVar[dict] = {"planes": "one leaf/spine plane: the spines are what it spreads over"}
    Knobs = SpreadKnobs

    def meaningful(self) -> None:
        p = self.fabric().params
        if p.spines < 2 or p.leaves < 2:
            self.refuse(f"spines={p.spines}, leaves={p.leaves}: needs two or more of each")

    def run(self, quick: bool) -> dict:
        fab = self.fabric()
        hosts = list(fab.hosts.values())
        src, dst = hosts[0].nics[0], hosts[-1].nics[0]          # first leaf to last leaf
        leaf = fab.host_link(src.ports[0]).b
        uplinks = sorted(l.a_intf for l in fab.switch_links() if l.a == leaf)
        with make_emulation(fab, servers=self.servers) as emu:
            before = port_bytes(emu, uplinks)
            run_flows(emu, [Flow(src, dst, parallel=self.knobs.connections)], self.knobs.seconds)
            after = port_bytes(emu, uplinks)
            return {"uplink_bytes": {i: after[i] - before[i] for i in uplinks},
                    "setup": emu.describe()}

    def judge(self, figures: dict) -> Judgement:
        sent = figures["uplink_bytes"]
        total = sum(sent.values())
        shares = {i: (n / total if total else 0.0) for i, n in sent.items()}
        least = min(shares.values())
        need = self.knobs_of(figures).min_share
        return Judgement(
            verdict(least >= need, valid=total > 0),
            expectation=f"each of the leaf's {len(sent)} uplinks carries at least {need:.0%} of its bytes",
            measured=", ".join(f"{i} {s:.0%}" for i, s in shares.items()) + f" of {total} bytes",
            derived={"least_share": round(least, 3)},
            headline=f"least-loaded spine {least:.0%} (>= {need:.0%})")


register(EcmpSpread)
