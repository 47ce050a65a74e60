"""Synthetic figures of every claim scenario, in the shape each run records them, with time series
where the figure draws them: what tests/unit/test_figures.py draws without a fabric.

The numbers are made up near what quick runs measured here; they only need to be drawable and
typical (a reproduced run), not to be judged anything in particular.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

FIXTURES = Path(__file__).parent / "unit" / "fixtures"


def ramp(base: float, during: float, fault: float, end: float, step: float = 0.2) -> list:
    """A series that sits at `base`, drops to `during` from 0 to `fault` s, and comes back."""
    points, t = [], -1.0
    while t <= end:
        points.append([round(t, 2), during if 0 <= t < fault else base])
        t += step
    return points


def hash_polarization():
    figures = json.loads((FIXTURES / "hash_polarization.json").read_text())["default"]
    figures.setdefault("setup", {})
    figures.setdefault("series", {})
    return figures


def dual_plane_balance():
    def variant(rounds):
        rows = [{"flows_per_port": f, "max_over_min": r, "mean_queue_kb": q, "cpu_busy": 0.75,
                 "bytes": [1e6 * x for x in f], "share": [round(x / sum(f), 3) for x in f]}
                for f, r, q in rounds]
        return {"rounds": rows,
                "mean_max_over_min": round(sum(x["max_over_min"] for x in rows) / len(rows), 2),
                "mean_queue_kb": round(sum(sum(x["mean_queue_kb"]) / 2 for x in rows) / len(rows), 2),
                "busy_port_queue_kb": round(sum(max(x["mean_queue_kb"]) for x in rows) / len(rows), 2)}
    return {"ecmp": variant([([3, 3], 1.0, [4.2, 3.5]), ([2, 4], 2.0, [1.0, 38.0]),
                             ([1, 5], 4.99, [0.3, 28.1])]),
            "dual-plane": variant([([3, 3], 1.0, [3.9, 3.6]), ([3, 3], 1.0, [3.7, 3.3]),
                                   ([3, 3], 1.01, [3.6, 3.6])]),
            "setup": {}, "series": {}}


def mpft_vs_mrft():
    def family(times, bus):
        return {"completion_s": times, "median_s": sorted(times)[1], "best_s": min(times),
                "busbw_mbit": bus, "ranks": 8}
    return {"mpft": family([1.175, 1.225, 1.202], [3.5, 3.4, 3.5]),
            "mrft": family([1.223, 1.185, 1.214], [3.4, 3.5, 3.4]),
            "cpu_busy": [0.625, 0.689, 0.71, 0.68, 0.733, 0.578],
            "setup": {"size": 600_000, "repetitions": 3}, "series": {}}


def node_limited_moe():
    def row(m, measured, busy):
        formula = m * 7000 * 3
        return {"M": m, "formula_bytes": formula, "measured_bytes": measured,
                "error": round(measured / formula - 1, 4), "completion_s": 0.7 * m, "cpu_busy": busy}
    return {"rows": [row(1, 21015, 0.62), row(4, 84825, 0.459), row(8, 169950, 0.319)],
            "setup": {"tokens_per_gpu": 4}, "series": {}}


def disjoint_paths():
    def row(hashing, selected, spines):
        return {"hashing": {"completion_s": hashing, "connections_per_spine": spines, "cpu_busy": 0.4},
                "path-selection": {"completion_s": selected, "cpu_busy": 0.48,
                                   "connections_per_spine": {"pl0s0": 2, "pl0s1": 2}}}
    stacked = {"pl0s0": 3, "pl0s1": 1}
    return {"rounds": [row(2.34, 1.707, stacked), row(2.376, 1.695, stacked), row(2.337, 1.719, stacked)],
            "setup": {"rounds": 3}, "series": {}}


def routing_policies():
    return {"ecmp": {"busbw_mbit": [3.615, 4.019], "mean_busbw_mbit": 3.817},
            "static": {"busbw_mbit": [7.193, 5.878], "mean_busbw_mbit": 6.536},
            "adaptive": {"busbw_mbit": [5.539, 5.165], "mean_busbw_mbit": 5.352},
            "cpu_busy": [0.416, 0.405, 0.571, 0.53, 0.49, 0.417],
            "setup": {"rounds": 2}, "series": {}}


def fault_setup(steps, y_label="busy host sending (Mbit/s)"):
    return {"warm_base_fault_after_s": steps, "x_label": "time since the fault (s)", "y_label": y_label}


def dual_tor_link_failure():
    return {"dual_tor": {"ports": 4, "nics": 2, "line_mbps": 40.0, "baseline_mbps": 40.02,
                         "during_mbps": 29.97, "repaired_mbps": 38.01, "loss": 0.251,
                         "failed_nic_kept": 0.5, "recovered_s_after_repair": 0.26, "fault_s": 2.5},
            "single_tor": {"ports": 2, "nics": 2, "line_mbps": 20.0, "baseline_mbps": 20.02,
                           "during_mbps": 9.99, "repaired_mbps": 18.68, "loss": 0.501,
                           "failed_nic_kept": 0.0, "recovered_s_after_repair": 1.45, "fault_s": 2.5},
            "setup": fault_setup([1.5, 2.0, 2.5, 2.5]),
            "series": {"dual-ToR": ramp(40.0, 30.0, 2.5, 5.0), "single-ToR": ramp(20.0, 10.0, 2.5, 5.0)}}


def link_flap():
    flapping = [[round(t / 5, 2), 20.0 if t < 0 or t >= 15 or (t / 5) % 1 >= 0.8 else 11.0]
                for t in range(-5, 30)]
    return {"dual_tor": {"line_mbps": 40.0, "baseline_mbps": 39.97, "during_train_mbps": 30.33,
                         "after_train_mbps": 38.79, "flapping_nic_kept_during_train": 0.538,
                         "flapping_nic_kept_after_train": 0.97, "longest_stall_s": 0.1, "train_s": 2.81},
            "single_tor": {"line_mbps": 20.0, "baseline_mbps": 20.02, "during_train_mbps": 10.03,
                           "after_train_mbps": 17.39, "flapping_nic_kept_during_train": 0.0,
                           "flapping_nic_kept_after_train": 0.744, "longest_stall_s": 3.62, "train_s": 2.8},
            "setup": {"flaps": 3, "period_s": 1.0, "down_s": 0.8, "x_label": "time since the first flap (s)",
                      "y_label": "busy host sending (Mbit/s)",
                      "warm_base_fault_after_s": [1.5, 1.5, 3.0, 3.0]},
            "series": {"dual-ToR": [[t, y + 20.0] for t, y in flapping],
                       "single-ToR": ramp(20.0, 10.0, 3.6, 5.0)}}


def one_way_fault():
    def phase(stuck, stall, detected, during):
        return {"carrier_up": True, "streams": 4, "streams_on_faulty_port": 2, "stuck_streams": stuck,
                "longest_stream_stall_s": stall, "fault_s": 4.0, "detected_ms": detected,
                "nic_baseline_mbps": 9.4, "nic_during_mbps": during}
    return {"carrier_only": phase(2, 3.8, None, 4.79), "with_detector": phase(0, 0.4, 97, 9.34),
            "setup": fault_setup([1.5, 1.5, 4.0, 1.0], "streams hashed onto the faulty port (Mbit/s)"),
            "series": {"carrier-based failover": ramp(4.7, 0.0, 4.0, 5.0),
                       "probe detector": ramp(4.7, 4.6, 4.0, 5.0)}}


def tor_failure():
    def host(base, during, repaired, nic0_kept, line=40.0):
        return {"line_mbps": line, "baseline_mbps": base, "during_mbps": during, "repaired_mbps": repaired,
                "kept": round(during / base, 3), "nic0_kept": nic0_kept}
    return {"dual_tor": {"p0s0h0": host(39.88, 30.0, 38.52, 0.502), "p0s0h1": host(40.01, 30.01, 39.24, 0.5)},
            "single_tor": None, "setup": fault_setup([1.5, 2.0, 2.5, 3.5]),
            "series": {"dual-ToR p0s0h0": ramp(39.9, 30.0, 2.5, 5.0)}}


def segment_tor_failure():
    run = {"control_mbps": [23.8] * 3, "capacity_mbps": 27.2, "baseline_mbps": 27.2, "during_mbps": 25.5,
           "repaired_mbps": 27.1, "nic0_baseline_mbps": 3.4, "nic0_during_mbps": 1.7, "ports": 2176,
           "ports_on_tor": 136, "nics": 1088, "stopped_nics": [], "stopped_untouched": [],
           "datagrams_sent": 60000, "datagrams_dropped": 3000, "cpu_busy": 0.6,
           "measured_s": [8.0, 12.5, 12.0],
           "datapath_pause_s": [0.5, 0.8], "delivered_mbps": [27.0, 25.5, 27.1]}
    return {"dual_tor": run, "single_tor": None,
            "setup": {"warm_base_fault_after_s": [3, 6, 8, 6], "window_s": 3.0,
                      "x_label": "time since the ToR failed (s)", "y_label": "segment total (Mbit/s)"},
            "series": {"dual-ToR": ramp(27.2, 25.5, 8.0, 12.0, 0.5)}}


def miswiring():
    pairs = ["p0s0h0-n0 -> p0s0h1-n0", "p0s0h0-n1 -> p0s0h1-n1", "p0s0h1-n0 -> p0s0h0-n0",
             "p0s0h1-n1 -> p0s0h0-n1"]
    named = [["p0s0h0-n0p0", "p0s0r0t1-eth2"], ["p0s0h1-n0p1", "p0s0r0t0-eth1"]]

    def fabric_run(passed, named, at, mbps, tier2, tier3, queue, busy):
        return {"wiring": {"passed": passed, "detail": "(recorded)", "at_s": at, "named": named},
                "ping": {"passed": True, "detail": "48/48 NIC pairs answer ping", "at_s": at + 0.2,
                         "named": []},
                "ping_pairs": 48, "ping_failed": 0, "traffic_from_s": at + 0.2,
                "pairs_mbps": dict(zip(pairs, mbps)), "tier2_mbps": tier2, "tier3_mbps": tier3,
                "core_queue_kb": queue, "cpu_busy": busy}

    def pair(rail, bound_m, tier_m):
        return {"rail": rail, "line_mbps": 12.0, "bound_mbps": 12.0, "bound_miswired_mbps": bound_m,
                "tier": 1, "tier_miswired": tier_m, "ratio": round(bound_m / 12.0, 3)}
    return {"setup": {"miswire": "p0s0r0t0-eth1,p0s0r0t1-eth2"}, "series": {},
            "model": dict(zip(pairs, [pair(0, 3.2, 3), pair(1, 12.0, 1), pair(0, 3.2, 3), pair(1, 12.0, 1)])),
            "expected_named": named,
            "blueprint": fabric_run(True, [], 1.37, [11.22, 11.21, 11.23, 11.19], 0.0, 0.0, 0.0, 0.724),
            "miswired": fabric_run(False, named, 0.16, [1.14, 11.21, 1.98, 11.2], 3.25, 3.16, 26.5, 0.759)}


def segment_placement():
    def placement(completion, busy, tier2=None, wire=None):
        return {"completion_s": completion, "tier2_bytes": tier2 or [None] * len(completion),
                "tier2_wire_bytes": wire or [0] * len(completion), "bg_mbit": [0.0] * len(completion),
                "cpu_busy": busy}

    def level(load, ready, inside, spread):
        return {"load": load, "inside": inside, "spread": spread, "bg_ready_mbit": ready,
                "bg_ran_throughout": True}
    return {"levels": [
        level(0.0, 0.0, placement([1.161, 1.179, 1.126], [0.7, 0.464, 0.436], [264, 16, 0], [1254, 280, 0]),
              placement([1.108, 1.125, 1.156], [0.508, 0.531, 0.526], [1500112, 1500064, 1500064],
                        [1607890, 1607446, 1607644])),
        level(0.75, 35.5, placement([1.134, 1.116, 1.123], [0.729, 0.715, 0.708]),
              placement([1.511, 1.628, 1.568], [0.691, 0.683, 0.697])),
        level(1.0, 41.6, placement([1.121, 1.13, 1.129], [0.752, 0.757, 0.755]),
              placement([2.898, 3.024, 3.153], [0.668, 0.661, 0.651]))],
        "rates": {"port_mbit": 6.0, "uplink_mbit": 12.0}, "ranks": 4,
        "expected_tier2_bytes": {"inside": 0, "spread": 1500000},
        "setup": {"knobs": {"size": 500_000, "job_hosts": 4, "width": 2, "loads": [0.75, 1.0],
                            "bg_hosts": 2, "streams": 2, "repetitions": 3}},
        "series": {}}


def core_pipeline():
    def placement(steps, busy, predicted, pp_s=0.03):
        phases = [[0.01, pp_s, round(s - 0.01 - pp_s, 4)] for s in steps]
        return {"step_s": steps, "best_s": min(steps), "median_s": sorted(steps)[1], "cpu_busy": busy,
                "best_cpu_busy": busy[steps.index(min(steps))], "predicted": {"step_s": predicted},
                "phases_s": phases, "best_phases_s": [min(p) for p in zip(*phases)], "core_phases": ["PP"]}
    trace = [[round(0.01 + 0.255 * k, 2), 3 if 7 <= k <= 14 else 4] for k in range(21)]
    return {
        "sizes": {"tp": 35000, "pp": 375, "dp": 343750},
        "oversubscribed": {"core_oversubscription": 15.0,
                           "pp-across": placement([0.4097, 0.4056, 0.3717], [0.784, 0.743, 0.704], 0.3101),
                           "dp-across": placement([4.9118, 5.0176, 5.0608], [0.46, 0.388, 0.571], 4.1253)},
        "non-blocking": {"core_oversubscription": 1.0,
                         "pp-across": placement([0.3826, 0.4281, 0.4069], [0.725, 0.734, 0.752], 0.3059),
                         "dp-across": placement([0.4229, 0.4527, 0.4687], [0.744, 0.883, 0.718], 0.3059)},
        "fault": {"core": "c0", "in_port": 2, "port_j": 4, "paired_port": 4, "stream_mbps": 0.533,
                  "ports": {"3": {"to": "p1a0n0", "before": 0.002, "during": 0.593, "after": 0.001},
                            "4": {"to": "p1a1n0", "before": 0.516, "during": 0.0, "after": 0.664}},
                  "t_fault": 1.7, "t_repair": 3.7, "t_end": 5.14, "trace": trace,
                  "flow": "tcp 10.0.0.1:47000 -> 10.0.1.1:5299 (p0s0h0-n0 -> p1s0h0-n0)"},
        "fault_cpu_busy": 0.283,
        "setup": {"rounds": 3, "divisor": 16000.0, "x_label": "time since core port j went down (s)",
                  "y_label": "sent by the core (Mbit/s)"},
        "series": {"port 3": [[t, 0.59 if 0 <= t < 2 else 0.0] for t in (x / 4 - 1.5 for x in range(20))],
                   "port 4": [[t, 0.0 if 0 <= t < 2 else 0.52] for t in (x / 4 - 1.5 for x in range(20))]}}


def rail_only():
    from scenarios.claims import rail_only as R
    from testbed.model import make_fabric
    size = 400_000

    def mode(fab, mode_name, busy):
        transfers = R.workload(fab, mode_name, size)
        tiers = [R.top_tier(fab, t) for t in transfers]
        rows = [{"src": t.src.name, "dst": t.dst.name, "phase": t.phase, "bytes": t.nbytes, "tier": k,
                 "completed": k is not None, "seconds": 0.34 if k is not None else None}
                for t, k in zip(transfers, tiers)]
        nics = {}
        for nic in fab.nics():
            sent = sum(t.nbytes for t, k in zip(transfers, tiers) if k and t.src == nic)
            received = sum(t.nbytes for t, k in zip(transfers, tiers) if k and t.dst == nic)
            nics[nic.name] = {"sent": sent + 16 if sent else 32,
                              "received": received + 36 if received else 88,
                              "expected_sent": sent, "expected_received": received}
        core = 2 * sum(t.nbytes for t, k in zip(transfers, tiers) if k == 3)
        done = all(r["completed"] for r in rows)
        return {"transfers": rows, "total": len(rows), "routed": sum(k is not None for k in tiers),
                "completed": sum(r["completed"] for r in rows), "seconds": 0.35 if done else None,
                "nic_bytes": nics, "link_bytes": {"tor-agg": 3_200_752, "agg-core": int(core * 1.06)},
                "expected_core_bytes": core, "cpu_busy": busy}
    figures = {"setup": {"size": size, "give_up_s": 4.0}, "series": {}, "cpu_busy": [0.65, 0.05, 0.65, 0.65]}
    for family in R.FAMILIES:
        fab = make_fabric(family, {"pods": 1, "segments": 2, "hosts": 1})
        figures[family] = {m: mode(fab, m, 0.6) for m in R.MODES}
    return figures


def roce_entropy():
    from scenarios.claims import roce_entropy as R
    ideal, spread_s = 7.778, 13.3333

    def draw(over, busiest, least, spread, ideal=ideal):
        high, low = (0.25 + spread / 2, 0.25 - spread / 2)
        util = {"pl0l0-eth5": busiest, "pl0l0-eth6": least, "pl0l1-eth5": busiest, "pl0l1-eth6": least}
        return {"sports": [49152], "uplink_util": util, "uplink_expected": dict(util),
                "uplink_share": {"pl0l0": [high, 0.25, 0.25, low], "pl0l1": [high, 0.25, 0.25, low]},
                "completion_s": round(over * ideal, 4), "traced_s": round(over * ideal, 4), "paths": [],
                "qp_delivered_mbit": [0.5, 1.0], "sent_fraction": 0.99, "cpu_busy": 0.5}
    rows = {"1": [draw(1.8, 1.0, 0.0, 0.5), draw(2.7, 1.0, 0.0, 0.75)] * 2,
            "2": [draw(1.8, 1.0, 0.22, 0.4)] * 4,
            "4": [draw(1.57, 1.0, 0.34, 0.3)] * 4,
            "8": [draw(1.35, 1.0, 0.5, 0.2), draw(1.24, 0.95, 0.56, 0.15)] * 2}
    pinned = draw(1.8, 1.0, 0.0, 0.5, ideal=spread_s)
    spread = [draw(1.1, 0.95, 0.85, 0.05, ideal=spread_s) for _ in range(2)]
    pinning = {"hosts": ["g0h0", "g1h0", "g0h2", "g1h2"], "spines": 2, "qps": 16,
               "predicted": {"pinned_s": round(1.8 * spread_s, 4), "spread_s": spread_s, "loss": 0.444,
                             "paths": [], "max_on_one_uplink": 2},
               "pinned": R.summary([pinned], spread_s), "spread": R.summary(spread, spread_s),
               "pinned_as_modelled": True}
    return {"ideal_s": ideal, "qps": {q: R.summary(r, ideal) for q, r in rows.items()},
            "setup": {"knobs": {"qps": [1, 2, 4, 8], "rounds": 4}}, "series": {}, "pinning": pinning}


def fast_uplinks():
    from scenarios.claims.fast_uplinks import predicted_slowdowns
    pace = 4.5

    def draw(uplinks, uplink_mbit, over):
        paths = [[f"h{i}", f"u{j}", f"d{j}", f"r{i}"] for i, j in enumerate(uplinks)]
        ports = {p: (uplink_mbit if p[0] in "ud" else 5.0) for path in paths for p in path}
        d = {"flow_paths": paths, "flow_bytes": [300_000] * 4, "port_mbit": ports, "cpu_busy": 0.6}
        d["flow_seconds"] = [round(s * 0.6 * over, 3) for s in predicted_slowdowns(d, pace)]
        return d

    def setting(draws, uplinks, uplink_mbit, over):
        return {"alone_s": 0.6, "pace_mbit": pace, "uplinks": uplinks, "uplink_mbit": uplink_mbit,
                "draws": [draw(d, uplink_mbit, over) for d in draws]}
    return {"1x": setting([[0, 0, 1, 2], [0, 1, 2, 3], [0, 0, 0, 1], [1, 1, 2, 2]], 4, 5.0, 1.08),
            "2x": setting([[0, 0, 1, 1], [0, 0, 0, 1], [0, 1, 1, 1], [0, 0, 1, 1]], 2, 10.0, 1.02),
            "setup": {"knobs": {"pace": 0.9}}, "series": {}}


def skeleton_probing():
    on, off = ["p0a0", 3], ["p1a1", 2]

    def probe(name, prober, path, lost=()):
        return {"name": name, "prober": prober, "src": "a", "dst": "b", "sport": 1, "dport": 2,
                "path": path, "in_model": True, "sent": 200, "lost": list(lost)}
    during0, during1 = range(50, 100), range(150, 200)
    probes = [probe("job0", "skeleton", [["p0e0", 3], on], during0), probe("job1", "skeleton", [["p1e0", 3]]),
              probe("mesh0", "full mesh", [on], during0), probe("mesh1", "full mesh", [off], during1)]
    probes += [probe(f"mesh{i}", "full mesh", [["c0", 1]]) for i in range(2, 10)]
    faults = [{"kind": "one-way", "egress": on, "on_job_path": True, "silent": True, "affects": [on]},
              {"kind": "drop-rule", "egress": off, "on_job_path": False, "silent": True, "affects": [off]}]
    knobs = {"job_hosts": 4, "faults": 2, "interval": 0.02, "misses": 3, "hold": 1.0, "gap": 1.0, "seed": 7}
    return {"probes": probes, "faults": faults, "windows": [[1.0, 2.0], [3.0, 4.0]], "rounds": 200,
            "seconds": 4.0, "late_max_s": 0.003, "cpu_busy": 0.55,
            "setup": {"seed": 7, "knobs": knobs}, "series": {}}


def training_fault():
    from scenarios.claims.training_fault import step_figures
    t_fault, t_repair, steps = 100.0, 105.0, 90

    def rows(n, step_s=0.11, fault_step_s=None):
        out, t = [], t_fault - 20 * step_s
        for k in range(n):
            d = fault_step_s if fault_step_s and t_fault < t < t_repair + step_s else step_s
            t += d if k else 0
            out.append((k, round(t, 3), round(d, 3)))
        return out

    def variant(rs, ok, failed_after=None):
        return {**step_figures(rs, t_fault, t_repair), "steps": steps, "job_ok": ok,
                "job": "job train: ...", "done_all_ranks": len(rs), "fault_injected": True,
                "fault_s": 5.0, "failed_after_fault_s": failed_after, "cpu_busy": 0.6,
                "target": "p0s0h0-n0p0"}
    dual, single = rows(steps, fault_step_s=0.15), rows(21)
    knobs = {"before": 2.0, "fault": 5.0, "after": 2.0, "timeout": 2.5, "compute": 0.1, "kind": "link"}
    return {"dual_tor": variant(dual, True), "single_tor": variant(single, False, failed_after=3.5),
            "setup": {"knobs": knobs, "steps": steps, "fault_step": 20,
                      "x_label": "end of step, s since the fault", "y_label": "rank 0's step time (s)"},
            "series": {"dual-ToR": [[round(t - t_fault, 3), d] for _, t, d in dual],
                       "single-ToR": [[round(t - t_fault, 3), d] for _, t, d in single]}}


BUILDERS = {"hash-polarization": hash_polarization, "dual-plane-balance": dual_plane_balance,
            "mpft-vs-mrft": mpft_vs_mrft, "node-limited-moe": node_limited_moe,
            "disjoint-paths": disjoint_paths, "routing-policies": routing_policies,
            "dual-tor-link-failure": dual_tor_link_failure, "link-flap": link_flap,
            "one-way-fault": one_way_fault, "tor-failure": tor_failure,
            "segment-tor-failure": segment_tor_failure, "miswiring": miswiring,
            "segment-placement": segment_placement, "core-pipeline": core_pipeline, "rail-only": rail_only,
            "roce-entropy": roce_entropy, "fast-uplinks": fast_uplinks, "skeleton-probing": skeleton_probing,
            "training-fault": training_fault}


def figures(name: str) -> dict:
    """A fresh copy of scenario `name`'s synthetic figures."""
    return copy.deepcopy(BUILDERS[name]())


def draw(name: str, path: Path):
    """Configure scenario `name`, report its synthetic figures and draw them to `path`: the
    (scenario, result, drawn) triple."""
    import scenarios
    scenario = scenarios.get(name)
    scenario.configure({}, True)
    result = scenario.report(figures(name))
    return scenario, result, scenario.plot(result, path)
