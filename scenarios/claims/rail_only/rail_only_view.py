"""The words and the picture of the rail-only scenario (scenarios/claims/rail_only/__init__.py),
from its figures."""
from __future__ import annotations

from testbed.scenario import plots

NAMES = {"railonly": "rail-only", "hpn": "HPN"}
MODE_LABELS = {"relay": "(a) relay in the host\n(one tenant)", "no relay": "(b) no relay\n(two tenants)"}
# a fabric's colour in both panels; a mode its shade (dark: relay, light: no relay)
COLOURS = {("railonly", "relay"): "tab:blue", ("railonly", "no relay"): "lightskyblue",
           ("hpn", "relay"): "tab:orange", ("hpn", "no relay"): "navajowhite"}
# the paper's share of transfers completed: rail-only has no path across rails in a pod without
# a relay in the host; HPN's any-to-any tier 2 and a relay carry every one
PAPER_DONE = {("railonly", "relay"): 100, ("railonly", "no relay"): 0, ("hpn", "relay"): 100,
              ("hpn", "no relay"): 100}


def _fabric_transfers(mode: dict) -> list[dict]:
    return [r for r in mode["transfers"] if r["tier"] != 0]


def _tiers(mode: dict) -> str:
    tiers = sorted({r["tier"] for r in _fabric_transfers(mode) if r["tier"] is not None})
    return "/".join(str(k) for k in tiers) or "-"


def _done(mode: dict) -> str:
    text = f"{mode['completed']}/{mode['total']} completed"
    return text + (f" in {mode['seconds']} s" if mode["seconds"] is not None else "")


def describe(figures: dict, effect: dict, wrong: dict, tolerance: float) -> tuple[str, str, str]:
    """(expectation, measured, headline) of a run."""
    ro, hpn = figures["railonly"], figures["hpn"]
    give_up = figures["setup"]["give_up_s"]
    lost, detour = effect["railonly_no_path"], effect["railonly_detour"]
    n_b = len(_fabric_transfers(ro["no relay"]))
    ro_b = []
    if lost:
        ro_b.append(f"{lost} have no path (cross-rail in a pod): they must not complete in {give_up:g} s "
                    "and their NICs carry none of their bytes")
    if detour:
        ro_b.append(f"{detour} detour over the core (tier 3), which must carry their bytes")
    expectation = (f"(a) relay: every transfer routed on both fabrics (over tiers {_tiers(ro['relay'])} on "
                   f"rail-only, {_tiers(hpn['relay'])} on HPN) and completes; (b) no relay: HPN routes "
                   f"all {n_b} over tiers {_tiers(hpn['no relay'])} and they complete; on rail-only "
                   + ("; ".join(ro_b) or "every one is routed as on HPN (no effect)")
                   + f"; every NIC receives its routed transfers' bytes within {tolerance:.0%} and "
                   "sends them (retransmissions on top)")
    sent = {f"{NAMES[f]} {m}": {nic: round(b["sent"] / 1000) for nic, b in figures[f][m]["nic_bytes"].items()}
            for f in ("railonly", "hpn") for m in ("relay", "no relay")}
    bad = [f"{k}: {'; '.join(v[:3])}" for k, v in wrong.items() if v]
    measured = (f"relay: rail-only {_done(ro['relay'])}, HPN {_done(hpn['relay'])}; no relay: rail-only "
                f"{_done(ro['no relay'])}, HPN {_done(hpn['no relay'])}; core links carried "
                f"{ro['no relay']['link_bytes'].get('agg-core', 0) / 1000:.0f} KB on rail-only (b); "
                f"KB each NIC sent: {sent}; "
                + (f"differs from the model: {' | '.join(bad)}" if bad
                   else "every transfer and NIC as the model says"))
    detoured = (f" ({detour} over the core: {ro['no relay']['seconds']} s vs HPN's "
                f"{hpn['no relay']['seconds']} s)") if detour else ""
    headline = (f"no relay: rail-only {ro['no relay']['completed']}/{ro['no relay']['total']} completed"
                f"{detoured}, "
                f"HPN {hpn['no relay']['completed']}/{hpn['no relay']['total']}; relay: "
                f"{ro['relay']['completed']}/{ro['relay']['total']} and "
                f"{hpn['relay']['completed']}/{hpn['relay']['total']}")
    return expectation, measured, headline


def plot_result(scenario, result, path, families, modes) -> bool:
    """Left: the share of transfers that completed, per run and fabric; right: the payload each
    NIC sent into the fabric, measured (bars) and as the model routes it (x)."""
    figs = result.figures
    fig, (done, nics) = plots.figure(scenario, result, ncols=2, size=(12, 5))
    plots.bars(done, [MODE_LABELS[m] for m in modes],
               {NAMES[f]: [[100 * figs[f][m]["completed"] / max(figs[f][m]["total"], 1)] for m in modes]
                for f in families}, "transfers completed (%)",
               colours={NAMES[f]: COLOURS.get((f, "relay")) for f in families})
    for g, f in enumerate(families):
        for c, m in enumerate(modes):
            if (f, m) in PAPER_DONE:
                first = PAPER_DONE[(f, m)] == 0 or (g, c) == (0, 0)
                plots.paper_value(done, PAPER_DONE[(f, m)], None if not first else
                                  "no path across rails without a relay (0%)" if PAPER_DONE[(f, m)] == 0
                                  else "routed, completes (100%)", span=plots.bar_span(c, g, len(families)),
                                  style=0 if PAPER_DONE[(f, m)] else 1)
    done.legend(fontsize="small", loc="upper center", ncol=2)
    done.set_title(f"completed within {result.setup.get('give_up_s', '?')} s each", fontsize=9)
    done.set_ylim(0, 140)           # room for the legend above the bars
    names = list(figs[families[0]][modes[0]]["nic_bytes"])
    groups = {f"{NAMES[f]} {m}": (f, m) for f in families for m in modes}
    plots.bars(nics, names, {g: [[figs[f][m]["nic_bytes"][n]["sent"] / 1000] for n in names]
                             for g, (f, m) in groups.items()}, "payload sent into the fabric (KB)",
               colours={g: COLOURS[fm] for g, fm in groups.items() if fm in COLOURS})
    width = 0.8 / len(groups)
    for g, (f, m) in enumerate(groups.values()):     # the model's bytes, over each bar
        xs = [c + (g - (len(groups) - 1) / 2) * width for c in range(len(names))]
        ys = [figs[f][m]["nic_bytes"][n]["expected_sent"] / 1000 for n in names]
        nics.scatter(xs, ys, marker="x", color="black", zorder=4, label="model" if g == 0 else None)
    top = max([figs[f][m]["nic_bytes"][n][k] for f, m in groups.values() for n in names
               for k in ("sent", "expected_sent")] + [1])
    nics.set_ylim(0, 1.45 * top / 1000)             # room for the legend above the bars
    nics.legend(fontsize="small", ncol=3, loc="upper center")
    nics.set_title("bytes each NIC carried (bars: ToR port counters; x: the model's routed transfers)",
                   fontsize=9)
    nics.tick_params(axis="x", labelrotation=30)
    plots.save(fig, path)
    return True
