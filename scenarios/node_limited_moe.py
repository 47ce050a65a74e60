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

from scenarios.base import Judgement, Scenario, verdict
from scenarios.common import setup_of, valid
from testbed.emulation.build import Emulation, Options
from testbed.measure.meters import cpu_busy_fraction
from testbed.model import make_fabric
from testbed.workload import collectives as C

SCALE = 0.01          # 400G -> 4 Mbit/s: 18 NICs stay well within what the datapath forwards
HIDDEN, BD, BC = 7000, 1, 2
TOLERANCE = 0.05


def moe_layer(emu, m: int, tokens: int) -> dict:
    """One MoE layer's dispatch and combine with tokens sent to at most `m` nodes: the payload the
    fabric delivered per token against the formula."""
    gpus = len(emu.fabric.nics())
    coll = C.moe_all_to_all(emu.fabric, None, tokens=tokens, m=m, hidden=HIDDEN, bd=BD, bc=BC)
    before = C.host_port_counters(emu)
    (r,), busy = cpu_busy_fraction(lambda: C.run(emu, coll))
    after = C.host_port_counters(emu)
    per_token = C.delivered_payload(before, after) / (gpus * tokens)
    formula = C.moe_bytes_per_token(m, HIDDEN, BD, BC)
    return {"M": m, "formula_bytes": formula, "measured_bytes": round(per_token),
            "error": round(per_token / formula - 1, 4), "relay_bytes": coll.relay_bytes(),
            "completion_s": round(r.seconds, 3), "phase_s": [round(x, 3) for x in r.phase_seconds],
            "cpu_busy": round(busy, 3)}


class NodeLimitedMoe(Scenario, name="node-limited-moe", claim="C11", tour=True):
    title = "fabric bytes per token with node-limited MoE routing"
    paper = ("DeepSeek-V3 sec. 4.3: IB bytes per token per MoE layer = M x H x (bd + bc): 84 KB with M = 4, "
             "FP8 dispatch, BF16 combine, H = 7,000; 168 KB with one copy per expert (8)")

    def run(self, quick: bool) -> dict:
        ms, tokens = ([1, 4, 8], 4) if quick else (list(range(1, 9)), 8)
        fab = make_fabric("mpft", {"leaves": 3, "hosts_per_leaf": 3, "scale": SCALE})
        with Emulation(fab, Options()) as emu:
            rows = [moe_layer(emu, m, tokens) for m in ms]
            setup = setup_of(emu, gpus=len(fab.nics()), tokens_per_gpu=tokens, hidden=HIDDEN)
        return {"rows": rows,
                "setup": {**setup, "x_label": "M (nodes per token)",
                          "y_label": "fabric KB per token per layer"},
                "series": {"formula (KB)": [[x["M"], x["formula_bytes"] / 1000] for x in rows],
                           "measured (KB)": [[x["M"], round(x["measured_bytes"] / 1000, 2)] for x in rows]}}

    def judge(self, figures: dict) -> Judgement:
        rows = figures["rows"]
        worst = max(abs(x["error"]) for x in rows)
        at4 = next((x for x in rows if x["M"] == 4), None)
        return Judgement(
            verdict(worst <= TOLERANCE, valid(*(x["cpu_busy"] for x in rows))),
            expectation=(f"per token per layer M x {HIDDEN} x ({BD} + {BC}) bytes: "
                         + ", ".join(f"M={x['M']}: {x['formula_bytes'] / 1000:g} KB" for x in rows)
                         + f", within {TOLERANCE:.0%}"),
            measured=(", ".join(f"M={x['M']}: {x['measured_bytes'] / 1000:.1f} KB in {x['completion_s']} s"
                                for x in rows)
                      + f"; worst error {worst:.1%}"
                      + (f"; M=4 gives {at4['measured_bytes'] / 1000:.1f} KB" if at4 else "")),
            derived={"worst_error": worst})
