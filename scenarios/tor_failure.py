"""A whole ToR dies (every port down). Each dual-ToR host under it loses one port of one NIC and runs
on at a reduced rate; single-ToR hosts lose that NIC altogether."""
from __future__ import annotations

from scenarios import harness
from scenarios.base import Judgement, Scenario, verdict
from scenarios.harness import BUSY, PEER, Timeline, Workload
from testbed.emulation.build import Emulation
from testbed.emulation.faults import Faults

TOR = "p0s0r0t0"    # pod 0, segment 0, rail 0, plane 0: NIC 0 of both hosts of the segment
HOSTS = [BUSY, PEER]
NICS = 2            # per host, in the default HPN


def host_figures(w: Workload, fab, host: str) -> dict:
    """What `host` sent before, during and after the fault, all of it and its NIC 0."""
    intfs, nic0 = w.host_intfs[host], w.nic_intfs[fab.hosts[host].nics[0].name]
    baseline, during = w.baseline(intfs), w.during(intfs)
    return {"line_mbps": fab.line_mbit(host), "baseline_mbps": round(baseline, 2),
            "during_mbps": round(during, 2), "repaired_mbps": round(w.repaired(intfs, 1.5), 2),
            "kept": harness.ratio(during, baseline, 0.0),
            "nic0_kept": harness.ratio(w.during(nic0), w.baseline(nic0), 0.0)}


class TorFailure(Scenario, name="tor-failure", claim="C2"):
    title = "a whole ToR fails: dual-ToR hosts run on at a reduced rate"
    paper = ("HPN secs. 2-3: a ToR failure takes down every host of a single-ToR rack and the job "
             "with it; dual-ToR turns it into one lost port per NIC on that ToR (6.25% of a host)")

    def run(self, quick: bool) -> dict:
        timeline = Timeline.choose(quick, (1.5, 2.0, 2.5, 3.5), (2.0, 4.0, 6.0, 5.0))
        setup = {"fabric": "hpn default; single_tor for the baseline", "tor": TOR, "hosts": HOSTS,
                 "warm_base_fault_after_s": timeline.steps(),
                 "x_label": "time since the ToR failed (s)", "y_label": f"{BUSY} sending (Mbit/s)"}
        return harness.dual_and_single(lambda single_tor: self.variant(single_tor, timeline), setup,
                                       single=not quick)     # quick: dual-ToR only

    def variant(self, single_tor: bool, timeline: Timeline) -> dict:
        fab = harness.hpn(single_tor)
        with Emulation(fab) as emu, Faults(emu) as faults:
            w = Workload(emu, pairs=[(BUSY, PEER), (PEER, BUSY)]).start(timeline)
            w.play(lambda: faults.switch_down(TOR), faults.repair_all)
            w.finish()
            return {**{h: host_figures(w, fab, h) for h in HOSTS},
                    "series": w.series(w.host_intfs[BUSY], t_ref=w.t_fault), "setup": emu.describe()}

    def judge(self, figures: dict) -> Judgement:
        dual, single = figures["dual_tor"], figures["single_tor"]     # single: None in quick mode
        fault = figures["setup"]["warm_base_fault_after_s"][2]
        expected_kept = 1 - 1 / (2 * NICS)
        valid = harness.saturated(*dual.values(), *(single or {}).values())
        dual_ok = all(0.6 <= r["kept"] <= 0.9 and r["nic0_kept"] >= 0.3
                      and r["repaired_mbps"] >= 0.85 * r["baseline_mbps"] for r in dual.values())
        single_ok = single is None or all(r["nic0_kept"] <= 0.05 for r in single.values())
        measured = "dual-ToR: " + "; ".join(
            f"{h} {r['baseline_mbps']:.1f} -> {r['during_mbps']:.1f} Mbit/s (kept {r['kept']:.0%}, its NIC 0 "
            f"{r['nic0_kept']:.0%}), {r['repaired_mbps']:.1f} after repair" for h, r in dual.items())
        if single:
            measured += "; single-ToR: " + "; ".join(
                f"{h} kept {r['kept']:.0%}, its NIC 0 {r['nic0_kept']:.0%}" for h, r in single.items())
        return Judgement(
            verdict(dual_ok and single_ok, valid),
            expectation=(f"both hosts of segment p0s0 send to each other from all {NICS} NICs; ToR {TOR} "
                         f"(rail 0, plane 0) fails for {fault:.0f} s. Dual-ToR: each host loses 1 of its "
                         f"{2 * NICS} ports and keeps about {expected_kept:.0%} (accepted 60-90%), every NIC "
                         f"still sends; single-ToR" + (" (not run in quick mode)" if single is None else "")
                         + ": NIC 0 of both hosts stops"),
            measured=measured,
            derived={"expected_kept_dual": expected_kept})
