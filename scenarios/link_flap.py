"""C3: a NIC-ToR link flaps (down and up within a second, several times). Single-ToR flows on it
stall, and TCP's backoff stretches the stall past the flapping; dual-ToR barely notices."""
from __future__ import annotations

from scenarios.base import Result, Scenario, verdict
from scenarios.dual_tor_link_failure import BUSY, PEER, Workload, hpn, stalled
from testbed.emulation.build import Emulation
from testbed.emulation.faults import Faults


class LinkFlap(Scenario):
    name = "link-flap"
    claim = "C3"
    title = "a flapping NIC-ToR link: single-ToR stalls, dual-ToR barely notices"
    paper = ("HPN sec. 3/9: a link flap stalled single-ToR training for over 9 s; under dual-ToR its "
             "effect was negligible")

    def run_variant(self, single_tor: bool, warm, base, flaps, period, down, after) -> dict:
        fab = hpn(single_tor)
        train = flaps * period
        with Emulation(fab) as emu, Faults(emu) as faults:
            w = Workload(emu).start(warm + base + train + after)
            host_intfs = w.host_intfs[BUSY]
            nic0 = fab.hosts[BUSY].nics[0]
            link = fab.host_link(nic0.ports[0])
            w.at(warm + base)
            t0 = w.now()
            faults.flap_train(link, flaps, period, down)
            t1 = w.now()
            w.finish()
            end = w.now()
            baseline = w.rate(host_intfs, warm, t0)
            nic_base = w.rate(w.nic_intfs[nic0.name], warm, t0)
            nic_series = w.series(w.nic_intfs[nic0.name], smooth=1)
            # the job waits for its slowest NIC: its progress stalls while any NIC's rate is ~0
            nic_stall = stalled([(t, v) for t, v in nic_series], t0, end, 0.1 * nic_base)
            return {"line_mbps": fab.line_mbit(BUSY),
                    "baseline_mbps": round(baseline, 2),
                    "during_train_mbps": round(w.rate(host_intfs, t0, t1), 2),
                    "after_train_mbps": round(w.rate(host_intfs, t1, end), 2),
                    "flapping_nic_kept_during_train": round(w.rate(w.nic_intfs[nic0.name], t0, t1) / nic_base, 3)
                    if nic_base else None,
                    "flapping_nic_kept_after_train": round(w.rate(w.nic_intfs[nic0.name], t1, end) / nic_base, 3)
                    if nic_base else None,
                    "longest_stall_s": round(nic_stall, 2), "train_s": round(t1 - t0, 2),
                    "series": w.series(host_intfs, t_ref=t0), "setup": emu.describe()}

    def measure(self, quick: bool) -> Result:
        # mostly down, briefly up: a flapping optic; the up windows are shorter than TCP's backed-off
        # retransmission timer, so single-ToR retransmissions keep landing in down windows
        warm, base, flaps, period, down, after = ((1.5, 1.5, 3, 1.0, 0.8, 3.0) if quick
                                                  else (2.0, 3.0, 5, 1.0, 0.8, 5.0))
        dual = self.run_variant(False, warm, base, flaps, period, down, after)
        single = self.run_variant(True, warm, base, flaps, period, down, after)
        downtime = flaps * down
        valid = all(v["baseline_mbps"] >= 0.7 * v["line_mbps"] for v in (dual, single))
        ok = (single["longest_stall_s"] >= 1.5 * down and dual["longest_stall_s"] <= 0.3
              and dual["during_train_mbps"] >= 0.7 * dual["baseline_mbps"]
              and dual["after_train_mbps"] >= 0.85 * dual["baseline_mbps"])
        figures = {k: {x: y for x, y in v.items() if x not in ("series", "setup")}
                   for k, v in (("dual_tor", dual), ("single_tor", single))}
        return Result(
            scenario=self.name, claim=self.claim, paper=self.paper,
            expectation=(f"{flaps} flaps of one NIC-ToR link of the busy host, one every {period} s, each "
                         f"{down} s down ({downtime:.1f} s down in all). Single-ToR: the NIC's flows lose "
                         f"packets at every flap and TCP's retransmission timeout doubles each time, so the "
                         f"NIC (and a job waiting for it) stalls across flaps, for longer than any one down "
                         f"period (at least 1.5 x {down} s). Dual-ToR: the NIC sends on its other port while "
                         f"one is down: no stall (<= 0.3 s), the host keeps >= 70% during the train "
                         f"(ideally 1 - {down / period:.0%} x 1/(2 x NICs) = {1 - down / period / 4:.0%})"),
            measured=(f"single-ToR: the flapping NIC stalled {single['longest_stall_s']} s at once (link "
                      f"down {downtime:.1f} s in all), kept {single['flapping_nic_kept_during_train']:.0%} "
                      f"of its rate during the train and {single['flapping_nic_kept_after_train']:.0%} "
                      f"in the {after:.0f} s after; dual-ToR: longest NIC stall {dual['longest_stall_s']} s, "
                      f"host {dual['baseline_mbps']:.1f} -> {dual['during_train_mbps']:.1f} Mbit/s during "
                      f"the train ({dual['during_train_mbps'] / dual['baseline_mbps']:.0%}), "
                      f"{dual['after_train_mbps']:.1f} after"),
            verdict=verdict(ok, valid),
            figures=figures,
            setup={"fabric": "hpn default; single_tor for the baseline", "busy_host": BUSY, "peer": PEER,
                   "flaps": flaps, "period_s": period, "down_s": down, "dual": dual["setup"],
                   "single": single["setup"], "x_label": "time since the first flap (s)",
                   "y_label": "busy host sending (Mbit/s)"},
            series={"dual-ToR": dual["series"], "single-ToR": single["series"]})


SCENARIO = LinkFlap
