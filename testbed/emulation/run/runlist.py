"""The runs on this machine as a user asks for them: the one running fabric (`trace`, `capture`
default to it) and a listing (`hpn-testbed ps`), read from each run's state (runstate.py)."""
from __future__ import annotations

import time

from testbed.core.errors import ParamError
from testbed.emulation.run.runstate import RunState, alive, runs


def running(run_id: str | None = None) -> RunState:
    """The running fabric `run_id` (None: the one running fabric); ParamError naming the
    running ones when there is no such run, or none, or several and no id was given."""
    states = {s.run_id: s for s in runs() if alive(s)}
    if run_id is None and len(states) == 1:
        return next(iter(states.values()))
    if run_id is None:
        raise ParamError("no fabric is running (start one with `hpn-testbed up`)" if not states else
                         f"several fabrics are running ({', '.join(states)}): name one with --fabric RUN")
    if run_id not in states:
        raise ParamError(f"no running fabric {run_id!r}; running: {', '.join(states) or 'none'}")
    return states[run_id]


def listing() -> list[dict]:
    """Every recorded run, for `hpn-testbed ps`: id, family, size, age, owner PID, datapath, and
    whether its owner still runs (a run whose owner is gone is a leftover for `clean`)."""
    from testbed.emulation.cluster import parts
    rows = []
    for state in runs():
        about, created = state.data.get("about", {}), state.data.get("created")
        rows.append({"run": state.run_id, "family": about.get("family"),
                     "switches": about.get("switches"), "hosts": about.get("hosts"),
                     "nics": about.get("nics"), "datapath": about.get("datapath"),
                     "pid": state.data["owner"][0], "live": alive(state),
                     "age_s": round(time.time() - created, 1) if created else None,
                     "servers": parts.server_names(state)})
    return rows
