"""A whole ToR dies (every port down). Each dual-ToR host under it loses one port of one NIC and runs
on at a reduced rate; single-ToR hosts lose that NIC altogether."""
from __future__ import annotations

from scenarios.base import Result, Scenario, verdict
from scenarios.dual_tor_link_failure import BUSY, PEER, Workload, hpn
from testbed.emulation.build import Emulation
from testbed.emulation.faults import Faults

TOR = "p0s0r0t0"    # pod 0, segment 0, rail 0, plane 0: NIC 0 of both hosts of the segment


class TorFailure(Scenario):
    name = "tor-failure"
    claim = "C2"
    title = "a whole ToR fails: dual-ToR hosts run on at a reduced rate"
    paper = ("HPN secs. 2-3: a ToR failure takes down every host of a single-ToR rack and the job "
             "with it; dual-ToR turns it into one lost port per NIC on that ToR (6.25% of a host)")

    def run_variant(self, single_tor: bool, warm, base, fault, after) -> dict:
        fab = hpn(single_tor)
        hosts = [BUSY, PEER]
        with Emulation(fab) as emu, Faults(emu) as faults:
            w = Workload(emu, pairs=[(BUSY, PEER), (PEER, BUSY)]).start(warm + base + fault + after)
            w.at(warm + base)
            t_fault = w.now()
            faults.switch_down(TOR)
            w.at(warm + base + fault)
            t_repair = w.now()
            faults.repair_all()
            w.finish()
            end = w.now()
            out = {"line_mbps": {h: fab.line_mbit(h) for h in hosts}, "setup": emu.describe(), "hosts": {}}
            for h in hosts:
                nic0 = fab.hosts[h].nics[0]
                b = w.rate(w.host_intfs[h], warm, t_fault)
                d = w.rate(w.host_intfs[h], t_fault + 0.5, t_repair)
                nb = w.rate(w.nic_intfs[nic0.name], warm, t_fault)
                nd = w.rate(w.nic_intfs[nic0.name], t_fault + 0.5, t_repair)
                out["hosts"][h] = {"baseline_mbps": round(b, 2), "during_mbps": round(d, 2),
                                   "repaired_mbps": round(w.rate(w.host_intfs[h], t_repair + 1.5, end), 2),
                                   "kept": round(d / b, 3) if b else 0.0,
                                   "nic0_kept": round(nd / nb, 3) if nb else 0.0}
            out["series"] = w.series(w.host_intfs[BUSY], t_ref=t_fault)
            return out

    def measure(self, quick: bool) -> Result:
        warm, base, fault, after = (1.5, 2.0, 2.5, 3.5) if quick else (2.0, 4.0, 6.0, 5.0)
        dual = self.run_variant(False, warm, base, fault, after)
        single = None if quick else self.run_variant(True, warm, base, fault, after)
        nics = 2
        expected_kept = 1 - 1 / (2 * nics)
        valid = all(v["hosts"][h]["baseline_mbps"] >= 0.7 * v["line_mbps"][h]
                    for v in filter(None, (dual, single)) for h in v["hosts"])
        dual_ok = all(0.6 <= r["kept"] <= 0.9 and r["nic0_kept"] >= 0.3
                      and r["repaired_mbps"] >= 0.85 * r["baseline_mbps"] for r in dual["hosts"].values())
        single_ok = single is None or all(r["nic0_kept"] <= 0.05 for r in single["hosts"].values())
        measured = "dual-ToR: " + "; ".join(
            f"{h} {r['baseline_mbps']:.1f} -> {r['during_mbps']:.1f} Mbit/s (kept {r['kept']:.0%}, its NIC 0 "
            f"{r['nic0_kept']:.0%}), {r['repaired_mbps']:.1f} after repair" for h, r in dual["hosts"].items())
        if single:
            measured += "; single-ToR: " + "; ".join(
                f"{h} kept {r['kept']:.0%}, its NIC 0 {r['nic0_kept']:.0%}" for h, r in single["hosts"].items())
        series = {"dual-ToR " + BUSY: dual["series"]}
        if single:
            series["single-ToR " + BUSY] = single["series"]
        return Result(
            scenario=self.name, claim=self.claim, paper=self.paper,
            expectation=(f"both hosts of segment p0s0 send to each other from all {nics} NICs; ToR {TOR} "
                         f"(rail 0, plane 0) fails for {fault:.0f} s. Dual-ToR: each host loses 1 of its "
                         f"{2 * nics} ports and keeps about {expected_kept:.0%} (accepted 60-90%), every NIC "
                         f"still sends; single-ToR" + (" (not run in quick mode)" if single is None else "")
                         + ": NIC 0 of both hosts stops"),
            measured=measured,
            verdict=verdict(dual_ok and single_ok, valid),
            figures={"dual_tor": dual["hosts"], "single_tor": single["hosts"] if single else None,
                     "expected_kept_dual": expected_kept},
            setup={"fabric": "hpn default; single_tor for the baseline", "tor": TOR, "hosts": [BUSY, PEER],
                   "warm_base_fault_after_s": [warm, base, fault, after], "dual": dual["setup"],
                   "x_label": "time since the ToR failed (s)", "y_label": f"{BUSY} sending (Mbit/s)"},
            series=series)


SCENARIO = TorFailure
