"""C16's arithmetic: one prober's alarms against the faults (precision, recall, time to detect,
probes per second), where it puts the blame (localization), and the loss with no fault in place.
Pure: figures in, figures out.

Localization, by the prober's own paths alone (network tomography's simplest form): while fault i
is in place, the links the prober blames are those every failing path (an alarm in the window)
crosses and no healthy path (no probe lost in the window) crosses. Against the truth, the
directions the fault stops that the prober's paths cross: precision is the share of blamed links
that are faulty, recall the share of faulty links blamed, `exact` the share of the faults it
detected whose blame is exactly the truth. A skeleton of few paths exonerates few links, so it
may blame a faulty link together with its path's other links; the mesh's many paths narrow it.
"""
from __future__ import annotations

import statistics

from testbed.measure.probing import outages


def in_window(t: float, window: list, k) -> bool:
    """Is time `t` (s since round 0) within a fault's window, widened by one interval before and
    half a gap after (the last probes sent before the repair come back late)?"""
    t_in, t_out = window
    return t_in - k.interval <= t <= t_out + k.gap / 2


def localize(figures: dict, prober: str, k) -> dict:
    """Where one prober puts the blame for each fault it saw, against the truth."""
    mine = [p for p in figures["probes"] if p["prober"] == prober]
    crossed = {tuple(e) for p in mine for e in p["path"]}
    blamed, hits, truths, exact = {}, 0, 0, 0
    for i, (fault, window) in enumerate(zip(figures["faults"], figures["windows"])):
        truth = {tuple(e) for e in fault["affects"]} & crossed
        if not fault.get("silent", True) or not truth:
            continue
        failing = [p for p in mine if any(in_window(first * k.interval, window, k)
                                          for first, _ in outages(p["lost"], k.misses))]
        healthy = [p for p in mine if not any(in_window(r * k.interval, window, k) for r in p["lost"])]
        truths += len(truth)
        if not failing:
            continue
        blame = set.intersection(*({tuple(e) for e in p["path"]} for p in failing))
        blame -= {tuple(e) for p in healthy for e in p["path"]}
        blamed[str(i)] = sorted(map(list, blame))
        hits += len(blame & truth)
        exact += blame == truth
    named = sum(len(b) for b in blamed.values())
    return {"blamed": blamed, "precision": round(hits / named, 3) if named else None,
            "recall": round(hits / truths, 3) if truths else None,
            "exact": round(exact / len(blamed), 3) if blamed else None,
            "blamed_mean": round(named / len(blamed), 2) if blamed else None}


def score(figures: dict, prober: str, k) -> dict:
    """Alarms (outages of `misses` probes) of one prober against the faults: precision, recall on
    the job's paths and on all, detection times, probes per second, localization."""
    res, faults, windows = figures["probes"], figures["faults"], figures["windows"]
    mine = [p for p in res if p["prober"] == prober]
    alarms, detect = [], {}
    for p in mine:
        for first, _ in outages(p["lost"], k.misses):
            t_alarm = (first + k.misses) * k.interval
            hit = next((i for i, window in enumerate(windows) if in_window(first * k.interval, window, k)
                        and any(e in p["path"] for e in faults[i]["affects"])), None)
            alarms.append(hit)
            if hit is not None:
                delay = t_alarm - windows[hit][0]
                detect[hit] = min(detect.get(hit, delay), delay)
    used = [i for i, f in enumerate(faults) if f["on_job_path"] and f.get("silent", True)]
    covered = [i for i, f in enumerate(faults) if any(e in p["path"] for p in mine for e in f["affects"])]
    true = sum(1 for a in alarms if a is not None)
    times = sorted(round(t * 1000) for t in detect.values())
    return {"paths": len(mine), "probes_per_s": round(sum(p["sent"] for p in mine) / figures["seconds"], 1),
            "alarms": len(alarms), "false_alarms": len(alarms) - true,
            "precision": round(true / len(alarms), 3) if alarms else 1.0,
            "recall_job": round(sum(1 for i in used if i in detect) / len(used), 3) if used else 0.0,
            "recall_all": round(len(detect) / len(faults), 3) if faults else 0.0,
            "covered_faults": len(covered), "missed_job_faults": [i for i in used if i not in detect],
            "detect_ms_median": statistics.median(times) if times else None,
            "detect_ms_max": max(times) if times else None,
            "detect_ms": {str(i): round(t * 1000) for i, t in sorted(detect.items())},
            "localized": localize(figures, prober, k)}


def quiet_loss(figures: dict, k) -> float:
    """The fraction of probes lost while no fault was in place (nor just repaired): what the
    emulator, not the fabric, lost."""
    def quiet(r: int) -> bool:
        return not any(in_window(r * k.interval, window, k) for window in figures["windows"])
    quiet_rounds = sum(1 for r in range(figures["rounds"]) if quiet(r))
    lost = sum(1 for p in figures["probes"] for r in p["lost"] if quiet(r))
    return round(lost / max(quiet_rounds * len(figures["probes"]), 1), 4)

