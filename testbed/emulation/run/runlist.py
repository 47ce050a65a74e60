"""The runs on this machine as a user asks for them: the one running fabric (`trace`, `capture`
default to it) and a listing (`hpn-testbed ps`), read from each run's state (runstate.py)."""
from __future__ import annotations

import time

from testbed.core.errors import ParamError
from testbed.emulation.run.runstate import NOT_OURS, RunState, alive, census


def running(run_id: str | None = None) -> RunState:
    """The running fabric `run_id` (None: the one running fabric); ParamError naming the
    running ones when there is no such run, or none, or several and no id was given, and
    saying so when the runs' state is root's or cannot be read (never "no fabric" then)."""
    found, bad = census()
    states = {s.run_id: s for s in found if alive(s)}
    if run_id is None and len(states) == 1:
        return next(iter(states.values()))
    if run_id in states:
        return states[run_id]
    refuse_unreadable(bad, run_id)
    if run_id is None:
        raise ParamError("no fabric is running (start one with `hpn-testbed up`)" if not states else
                         f"several fabrics are running ({', '.join(states)}): name one with --fabric RUN")
    raise ParamError(f"no running fabric {run_id!r}; running: {', '.join(states) or 'none'}")


def refuse_unreadable(bad: dict[str, str], run_id: str | None = None) -> None:
    """ParamError if a run's state could not be read where it matters: one that is root's
    (we are another user: only root may say what runs), or `run_id`'s own, or any when no id
    was named (an unreadable run may be the running one)."""
    theirs = [run for run, why in bad.items() if why == NOT_OURS]
    if theirs:
        named = ", ".join(theirs[:3]) + (" ..." if len(theirs) > 3 else "")
        raise ParamError(f"the state of run{'s' if len(theirs) > 1 else ''} {named} is root's: "
                         "run this as root (sudo)")
    for run, why in bad.items():
        if run_id in (None, run):
            raise ParamError(f"run {run}: {why}")


def listing() -> list[dict]:
    """Every recorded run, for `hpn-testbed ps`: id, family, size, age, owner PID, datapath, and
    whether its owner still runs (a run whose owner is gone is a leftover for `clean`); a run
    whose state cannot be read is a row with its `error` (ParamError if it is root's)."""
    found, bad = census()
    refuse_unreadable({run: why for run, why in bad.items() if why == NOT_OURS})
    from testbed.emulation.cluster import parts
    rows = []
    for state in found:
        about, created = state.data.get("about", {}), state.data.get("created")
        rows.append({"run": state.run_id, "family": about.get("family"),
                     "switches": about.get("switches"), "hosts": about.get("hosts"),
                     "nics": about.get("nics"), "datapath": about.get("datapath"),
                     "pid": state.data["owner"][0], "live": alive(state),
                     "age_s": round(time.time() - created, 1) if created else None,
                     "servers": parts.server_names(state)})
    blank = dict.fromkeys(("family", "switches", "hosts", "nics", "datapath", "pid", "live", "age_s"))
    rows += [{"run": run, **blank, "servers": [], "error": why} for run, why in bad.items()]
    return sorted(rows, key=lambda r: r["run"])
