"""C2: a NIC-ToR link fails under a busy host. Dual-ToR loses one of the host's 2 x NICs ports and
recovers at repair; single-ToR loses every flow on the link. The workload: testbed/scenario/fault_harness.py.

The expectation follows the fabric: with `--set nics=3` the dual-ToR host has 6 ports and is
expected to lose 1/6 (reported as `dual_tor.loss`, accepted within 40% of it)."""
from __future__ import annotations

from pathlib import Path

from testbed.emulation.factory import make_emulation
from testbed.emulation.faults.inject import Faults
from testbed.scenario import fault_harness as harness
from testbed.scenario import plots
from testbed.scenario.base import Judgement, verdict
from testbed.scenario.fault_harness import BUSY, PAPER_LOSS, FaultKnobs, Workload


class DualTorLinkFailure(harness.FaultScenario, name="dual-tor-link-failure", claim="C2", tour=True):
    title = "one NIC-ToR link fails under a busy host: dual-ToR vs single-ToR"
    paper = ("HPN sec. 9: failing one NIC-ToR link cost 6.25% of throughput (1 of a host's 16 200G "
             "ports) and recovered the moment it was repaired; single-ToR halted the job")
    Knobs = FaultKnobs
    x_label = "time since the link failed (s)"

    def variant(self, single_tor: bool, timeline) -> dict:
        fab = self.fabric(single_tor=single_tor)
        with make_emulation(fab, servers=self.servers) as emu, Faults(emu) as faults:
            nic0, link = harness.first_link(fab)
            w = Workload(emu, streams=self.knobs.streams).start(timeline)
            w.play(lambda: faults.link_down(link))
            w.finish()
            host, nic = w.host_intfs[BUSY], w.nic_intfs[nic0.name]
            baseline, during = w.baseline(host), w.during(host)
            series = w.series(host, t_ref=w.t_fault)
            repair_at = w.t_repair - w.t_fault
            recover = next((t for t, v in series if t > repair_at and v >= 0.9 * baseline), None)
            return {"ports": len(host), "nics": len(fab.hosts[BUSY].nics),
                    "line_mbps": fab.line_mbit(BUSY),
                    "baseline_mbps": round(baseline, 2), "during_mbps": round(during, 2),
                    "repaired_mbps": round(w.repaired(host, 1.0), 2),
                    "loss": round(1 - during / baseline, 3) if baseline else None,
                    "failed_nic_kept": harness.ratio(w.during(nic), w.baseline(nic)),
                    "recovered_s_after_repair": None if recover is None else round(recover - repair_at, 2),
                    "fault_s": round(repair_at, 2), "series": series, "setup": emu.describe()}

    def judge(self, figures: dict) -> Judgement:
        dual, single = figures["dual_tor"], figures["single_tor"]
        fault = figures["setup"]["warm_base_fault_after_s"][2]
        n = dual["nics"]
        expected = 1 / (2 * n)
        valid = harness.saturated(dual, single)
        dual_ok = (0.6 * expected <= dual["loss"] <= 1.4 * expected and dual["failed_nic_kept"] >= 0.3
                   and dual["repaired_mbps"] >= 0.85 * dual["baseline_mbps"])
        single_ok = single["failed_nic_kept"] <= 0.05
        return Judgement(
            verdict(dual_ok and single_ok, valid),
            expectation=(f"the busy host sends from its {n} NICs ({2 * n} ports dual-ToR) to a host in its "
                         f"segment; one NIC-ToR link fails for {fault:.0f} s. Dual-ToR: the host loses "
                         f"1/(2 x {n} NICs) = {expected:.1%} of its sending throughput (the NIC goes on "
                         f"on its other port; accepted 60-140% of that) and is back at repair. "
                         f"Single-ToR: the NIC's flows stop "
                         f"(the host loses 1/{n}). The claim is about the busy host's own throughput, "
                         f"so it is measured on its links (what its ToRs receive from it); the peer is "
                         f"in the same segment so that the data never crosses the 15:1 core"),
            measured=(f"dual-ToR: {dual['baseline_mbps']:.1f} -> {dual['during_mbps']:.1f} Mbit/s, loss "
                      f"{dual['loss']:.1%} (expected {expected:.1%}), the failed NIC kept "
                      f"{dual['failed_nic_kept']:.0%} of its rate, {dual['repaired_mbps']:.1f} Mbit/s after "
                      f"repair (>= 90% of baseline {dual['recovered_s_after_repair']} s after it); "
                      f"single-ToR: {single['baseline_mbps']:.1f} -> {single['during_mbps']:.1f} Mbit/s, "
                      f"loss {single['loss']:.1%}, the failed NIC kept {single['failed_nic_kept']:.0%}, "
                      f"back to 90% {single['recovered_s_after_repair']} s after repair"),
            derived={"expected_loss_dual": round(expected, 3)},
            headline=f"dual-ToR loss {dual['loss']:.1%} (exp. {expected:.1%}), "
                     f"single-ToR NIC kept {single['failed_nic_kept']:.0%}")

    def plot(self, result, path: Path) -> bool:
        dual, single = result.figures["dual_tor"], result.figures["single_tor"]
        expected = result.figures["expected_loss_dual"]
        levels = {f"dual-ToR expected (-{expected:.1%})": dual["baseline_mbps"] * (1 - expected),
                  f"single-ToR expected (-1/{single['nics']})":
                      single["baseline_mbps"] * (1 - 1 / single["nics"])}
        paper = {f"dual-ToR -{PAPER_LOSS:.2%} (1 of a host's 16 ports)":
                 dual["baseline_mbps"] * (1 - PAPER_LOSS),
                 "single-ToR: the job halted (0)": 0.0}
        return plots.fault_timeline(self, result, path, [(0.0, dual["fault_s"])], "link down", levels,
                                    paper=paper)
