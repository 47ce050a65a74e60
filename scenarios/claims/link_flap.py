"""C3: a NIC-ToR link flaps (down and up within a second, several times). Single-ToR flows on it
stall, and TCP's backoff stretches the stall past the flapping; dual-ToR barely notices."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from testbed.core.errors import ParamError
from testbed.emulation.factory import make_emulation
from testbed.emulation.faults import registry as fault_registry
from testbed.emulation.faults.inject import Faults
from testbed.scenario import fault_harness as harness
from testbed.scenario import plots
from testbed.scenario.base import Judgement, verdict
from testbed.scenario.fault_harness import BUSY, RunKnobs, Workload
from testbed.scenario.timeline import Timeline

PAPER_STALL_S = 9.0     # HPN: a link flap stalled single-ToR training for over 9 s


@dataclass(frozen=True)
class FlapKnobs(RunKnobs):
    # mostly down, briefly up: a flapping optic; the up windows are shorter than TCP's backed-off
    # retransmission timer, so single-ToR retransmissions keep landing in down windows
    flaps: int = 5
    period: float = 1.0
    down: float = 0.8
    base: float = 3.0
    QUICK: ClassVar[dict] = {"warm": 1.5, "base": 1.5, "flaps": 3, "after": 3.0}
    BOUNDS: ClassVar[dict] = {**RunKnobs.BOUNDS, "flaps": (1, 100, "flaps in the train"),
              "period": (0.1, 30.0, "s from one flap to the next"), "down": (0.05, 30.0, "s down per flap")}
    HELP: ClassVar[dict] = {**RunKnobs.HELP,
            "flaps": "flaps in the train", "period": "s from one flap to the next",
            "down": "s the link is down in each flap"}

    def rules(self) -> None:
        if self.down >= self.period:
            raise ParamError(f"down={self.down}: must be shorter than period={self.period}")


class LinkFlap(harness.FaultScenario, name="link-flap", claim="C3", tour=True):
    title = "a flapping NIC-ToR link: single-ToR stalls, dual-ToR barely notices"
    paper = ("HPN sec. 3/9: a link flap stalled single-ToR training for over 9 s; under dual-ToR its "
             "effect was negligible")

    Knobs = FlapKnobs
    x_label = "time since the first flap (s)"

    def timeline(self) -> Timeline:
        k = self.knobs
        return Timeline(k.warm, k.base, k.flaps * k.period, k.after)

    def setup(self, timeline: Timeline) -> dict:
        k = self.knobs
        return {**super().setup(timeline), "flaps": k.flaps, "period_s": k.period, "down_s": k.down}

    def variant(self, single_tor: bool, timeline: Timeline) -> dict:
        fab, k = self.fabric(single_tor=single_tor), self.knobs
        flaps = k.flaps
        with make_emulation(fab, servers=self.servers) as emu, Faults(emu) as faults:
            nic0, link = harness.first_link(fab)
            w = Workload(emu, streams=k.streams).start(timeline)
            w.play(lambda: fault_registry.get("flap").inject(faults, port=link.a_intf, count=flaps,
                                                             period=k.period, down=k.down), by_itself=True)
            w.finish()
            host, nic = w.host_intfs[BUSY], w.nic_intfs[nic0.name]
            nic_base = w.baseline(nic)
            # the job waits for its slowest NIC: its progress stalls while any NIC's rate is ~0
            nic_stall = harness.stalled(w.series(nic, smooth=1), w.t_fault, w.t_end, 0.1 * nic_base)
            return {"line_mbps": fab.line_mbit(BUSY), "nics": len(fab.hosts[BUSY].nics),
                    "baseline_mbps": round(w.baseline(host), 2),
                    "during_train_mbps": round(w.during(host, settle=0), 2),
                    "after_train_mbps": round(w.repaired(host, settle=0), 2),
                    "flapping_nic_kept_during_train": harness.ratio(w.during(nic, settle=0), nic_base),
                    "flapping_nic_kept_after_train": harness.ratio(w.repaired(nic, settle=0), nic_base),
                    "longest_stall_s": round(nic_stall, 2), "train_s": round(w.t_repair - w.t_fault, 2),
                    # the host, and the flapping NIC the claim is about (unsmoothed: its stalls)
                    "series": {"host": w.series(host, t_ref=w.t_fault),
                               "flapping NIC": w.series(nic, t_ref=w.t_fault, smooth=1)},
                    "setup": emu.describe()}

    def judge(self, figures: dict) -> Judgement:
        dual, single = figures["dual_tor"], figures["single_tor"]
        setup = figures["setup"]
        flaps, period, down = setup["flaps"], setup["period_s"], setup["down_s"]
        after = setup["warm_base_fault_after_s"][3]
        downtime = flaps * down
        ideal = kept_ideal(down, period, dual.get("nics", 2))
        valid = harness.saturated(dual, single)
        ok = (single["longest_stall_s"] >= 1.5 * down and dual["longest_stall_s"] <= 0.3
              and dual["during_train_mbps"] >= 0.7 * dual["baseline_mbps"]
              and dual["after_train_mbps"] >= 0.85 * dual["baseline_mbps"])
        return Judgement(
            verdict(ok, valid),
            expectation=(f"{flaps} flaps of one NIC-ToR link of the busy host, one every {period} s, each "
                         f"{down} s down ({downtime:.1f} s down in all). Single-ToR: the NIC's flows lose "
                         f"packets at every flap and TCP's retransmission timeout doubles each time, so the "
                         f"NIC (and a job waiting for it) stalls across flaps, for longer than any one down "
                         f"period (at least 1.5 x {down} s). Dual-ToR: the NIC sends on its other port while "
                         f"one is down: no stall (<= 0.3 s), the host keeps >= 70% during the train "
                         f"(ideally 1 - {down / period:.0%} x 1/(2 x NICs) = {ideal:.0%})"),
            measured=(f"single-ToR: the flapping NIC stalled {single['longest_stall_s']} s at once (link "
                      f"down {downtime:.1f} s in all), kept {single['flapping_nic_kept_during_train']:.0%} "
                      f"of its rate during the train and {single['flapping_nic_kept_after_train']:.0%} "
                      f"in the {after:.0f} s after; dual-ToR: longest NIC stall {dual['longest_stall_s']} s, "
                      f"host {dual['baseline_mbps']:.1f} -> {dual['during_train_mbps']:.1f} Mbit/s during "
                      f"the train ({dual['during_train_mbps'] / dual['baseline_mbps']:.0%}), "
                      f"{dual['after_train_mbps']:.1f} after"),
            headline=f"stall single-ToR {single['longest_stall_s']} s, dual-ToR {dual['longest_stall_s']} s")

    def plot(self, result, path: Path) -> bool:
        setup = result.setup
        windows = [(i * setup["period_s"], i * setup["period_s"] + setup["down_s"])
                   for i in range(setup["flaps"])]
        dual, single = result.figures["dual_tor"], result.figures["single_tor"]
        level = kept_ideal(setup["down_s"], setup["period_s"], dual.get("nics", 2)) * dual["baseline_mbps"]
        return plots.fault_timeline(
            self, result, path, windows, "link down",
            levels={"dual-ToR host, expected during the train": level},
            paper={f"single-ToR stalled > {PAPER_STALL_S} s": (0.0, (0.0, PAPER_STALL_S)),
                   "dual-ToR: negligible (its rate before)": (dual["baseline_mbps"], (0.0, windows[-1][1]))},
            noted=f"paper: single-ToR stalled > 9 s, dual-ToR negligible\nhere: NIC stall single-ToR "
                  f"{single['longest_stall_s']} s, dual-ToR {dual['longest_stall_s']} s")


def kept_ideal(down: float, period: float, nics: int) -> float:
    """The share of its rate a dual-ToR host keeps while one NIC port is down `down` of every
    `period` s: that port carries 1/(2 x NICs) of the host's traffic."""
    return 1 - down / period / (2 * nics)
