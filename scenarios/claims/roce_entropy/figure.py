"""C14's figure: where ECMP put the ring's QPs, the ring's completion per QP count, and the
path-pinning baseline on the partly allocated fabric."""
from __future__ import annotations

from pathlib import Path

from testbed.scenario import plots

from .ring import META_GAIN, META_PIN_LOSS


def draw(scenario, result, path: Path) -> None:
    """Left: every uplink's utilization in every round, per QP count, with the case study's 95%
    and 22%; middle: the ring's completion over the prediction, with Meta's +40% marked; right
    (when it ran): the pinning part's, with Meta's >30% loss marked."""
    rows = result.figures["qps"]
    counts = sorted(rows, key=int)
    ideal = result.figures["ideal_s"]
    pinning = result.figures.get("pinning")
    fig, axes = plots.figure(scenario, result, ncols=3 if pinning else 2, size=(16 if pinning else 11, 4.5))
    links, done = axes[0], axes[1]
    for c, q in enumerate(counts):
        utils = [u for r in rows[q]["rounds"] for u in r["uplink_util"].values()]
        jitter = [c + 0.3 * ((k % 7) / 6 - 0.5) for k in range(len(utils))]
        links.scatter(jitter, [u * 100 for u in utils], s=10, alpha=0.6, color=plots.COLOURS[0],
                      label="an uplink in one round" if c == 0 else None)
    links.plot(range(len(counts)), [rows[q]["busiest_util"] * 100 for q in counts], "v-", color="tab:red",
               label="busiest (mean over rounds)")
    links.plot(range(len(counts)), [rows[q]["least_util"] * 100 for q in counts], "^-", color="tab:green",
               label="least busy (mean over rounds)")
    plots.paper_value(links, 95, "case study 002: one link 95%", style=0, colour="dimgrey")
    plots.paper_value(links, 22, "... another 22%", style=1, colour="dimgrey")
    links.set_xticks(range(len(counts)), [f"{q} QP" for q in counts])
    links.set_ylabel("leaf uplink utilization (%)")
    links.set_title("where ECMP put the ring's QPs", fontsize=9)
    links.legend(fontsize="x-small", loc="center right")
    plots.bars(done, [f"{q} QP" for q in counts], {
        "measured": [[r["completion_s"] / ideal for r in rows[q]["rounds"] if r["completion_s"]]
                     for q in counts],
        "fluid model of the traced paths": [[r["traced_s"] / ideal for r in rows[q]["rounds"]]
                                            for q in counts]},
        "completion / max-min-fair prediction", annotate=False)
    done.axhline(1.0, color="black", lw=1, ls="--", label="prediction: spread evenly over every spine")
    meta = rows[counts[0]]["over_ideal"] / META_GAIN
    plots.paper_point(done, len(counts) - 1, meta, f"Meta: {META_GAIN - 1:+.0%} over {counts[0]} QP",
                      colour="tab:purple")
    done.set_title("ring AllReduce completion", fontsize=9)
    done.legend(fontsize="x-small")
    if pinning:
        draw_pinning(axes[2], pinning)
    plots.save(fig, path)


def draw_pinning(ax, pin: dict) -> None:
    """Pinned and hashed on the partly allocated fabric: completion over the spread prediction,
    measured and modelled, with the completion at which pinning has lost Meta's 30%."""
    spread = pin["predicted"]["spread_s"]
    names = {"pinned": "pinned per destination", "spread": f"ECMP, {pin['qps']} QPs hashed"}
    plots.bars(ax, list(names.values()), {
        "measured": [[r["completion_s"] / spread for r in pin[n]["rounds"] if r["completion_s"]]
                     for n in names],
        "fluid model of the traced paths": [[r["traced_s"] / spread for r in pin[n]["rounds"]]
                                            for n in names]},
        "completion / max-min-fair prediction", annotate=False)
    ax.axhline(1.0, color="black", lw=1, ls="--", label="prediction: spread evenly over every spine")
    plots.paper_value(ax, 1 / (1 - META_PIN_LOSS),
                      f"Meta: pinning lost >{META_PIN_LOSS:.0%} (above this line)",
                      colour="tab:purple", style=1)
    ax.set_title(f"partly allocated: job on {len(pin['hosts'])} hosts, {pin['spines']} spines", fontsize=9)
    ax.legend(fontsize="x-small")

