"""C11 node-limited MoE routing: bytes crossing the fabric per token per MoE layer = M x H x (bd + bc).

DeepSeek-V3 sends each token once to each of the (at most) M nodes holding its experts, then
copies it over NVLink inside the node; dispatch in FP8 (1 byte), combine in BF16 (2 bytes). Here:
a multi-plane fat-tree of nine hosts (so that M can reach 8 other nodes) with two GPUs/NICs each;
every GPU holds a few tokens of the paper's hidden size H = 7,000; for each M the MoE layer's
dispatch and combine run (fabric transfers, and intra-host relays that never touch the fabric),
and the payload the fabric delivered is read from the switch ports' counters (bytes less one
header per packet). Scaled: the token count, not the bytes per token.
"""
from __future__ import annotations

from scenarios.base import Result, Scenario, verdict
from scenarios.common import setup_of, valid
from testbed.emulation.build import Emulation, Options
from testbed.measure.meters import cpu_busy_fraction
from testbed.model import make_fabric
from testbed.workload import collectives as C

SCALE = 0.01          # 400G -> 4 Mbit/s: 18 NICs stay well within what the datapath forwards
HIDDEN, BD, BC = 7000, 1, 2
TOLERANCE = 0.05


class NodeLimitedMoe(Scenario):
    name = "node-limited-moe"
    claim = "C11"
    title = "fabric bytes per token with node-limited MoE routing"
    paper = ("DeepSeek-V3 sec. 4.3: IB bytes per token per MoE layer = M x H x (bd + bc): 84 KB with M = 4, "
             "FP8 dispatch, BF16 combine, H = 7,000; 168 KB with one copy per expert (8)")

    def measure(self, quick: bool) -> Result:
        ms = [1, 4, 8] if quick else list(range(1, 9))
        tokens = 4 if quick else 8
        fab = make_fabric("mpft", {"leaves": 3, "hosts_per_leaf": 3, "scale": SCALE})
        rows, busy, series = [], [], {"formula (KB)": [], "measured (KB)": []}
        with Emulation(fab, Options()) as emu:
            gpus = len(fab.nics())
            for m in ms:
                coll = C.moe_all_to_all(fab, None, tokens=tokens, m=m, hidden=HIDDEN, bd=BD, bc=BC)
                before = C.host_port_counters(emu)
                (r,), b = cpu_busy_fraction(lambda: C.run(emu, coll))
                after = C.host_port_counters(emu)
                busy.append(b)
                payload = C.delivered_payload(before, after)
                per_token = payload / (gpus * tokens)
                formula = C.moe_bytes_per_token(m, HIDDEN, BD, BC)
                rows.append({"M": m, "formula_bytes": formula, "measured_bytes": round(per_token),
                             "error": round(per_token / formula - 1, 4),
                             "relay_bytes": coll.relay_bytes(),
                             "completion_s": round(r.seconds, 3),
                             "phase_s": [round(x, 3) for x in r.phase_seconds],
                             "cpu_busy": round(b, 3)})
                series["formula (KB)"].append([m, formula / 1000])
                series["measured (KB)"].append([m, round(per_token / 1000, 2)])
            setup = setup_of(emu, gpus=gpus, tokens_per_gpu=tokens, hidden=HIDDEN)
        worst = max(abs(x["error"]) for x in rows)
        ok = worst <= TOLERANCE
        at4 = next((x for x in rows if x["M"] == 4), None)
        return Result(
            self.name, self.claim, self.paper,
            expectation=(f"per token per layer M x {HIDDEN} x ({BD} + {BC}) bytes: "
                         + ", ".join(f"M={x['M']}: {x['formula_bytes'] / 1000:g} KB" for x in rows)
                         + f", within {TOLERANCE:.0%}"),
            measured=(", ".join(f"M={x['M']}: {x['measured_bytes'] / 1000:.1f} KB in {x['completion_s']} s"
                                for x in rows)
                      + f"; worst error {worst:.1%}"
                      + (f"; M=4 gives {at4['measured_bytes'] / 1000:.1f} KB" if at4 else "")),
            verdict=verdict(ok, valid(*busy)),
            figures={"rows": rows, "worst_error": worst},
            setup={**setup, "x_label": "M (nodes per token)", "y_label": "fabric KB per token per layer"},
            series=series)


SCENARIO = NodeLimitedMoe
