"""Progress while long work runs: the work names its phases, the command line shows them.

Code that does long work marks its phases, nested as they come, and may say how far it is:

    with progress.phase("learning"):
        progress.note("12 of 16 NIC ports")

and a sequence of long steps (the tour, `--repeat`) counts them, with an ETA:

    steps = progress.Steps("tour", len(runs))
    with steps.step("link-flap"): ...

A name or a note may be a function, called at each redraw of the live line, so that what it says
(the tour's elapsed time and ETA, the fault in place, the time left) moves while the phase runs
instead of freezing at what it was when the phase began.

How they are shown is chosen once, by the command line (`progress.shown(view, verbosity)`), on
stderr, so that stdout keeps the results (and stays pure JSON under --json):
- "live" (stderr is a terminal): one status line (rich), redrawn 4 times a second while a phase
  runs, with the innermost phase's elapsed time; gone when the work ends;
- "lines" (a pipe or a file, or a terminal that says it cannot redraw: TERM=dumb, as in an
  Emacs shell or a container's plain console; rich would draw no live line there at all): one
  timestamped plain line as each phase starts, no control characters;
- "off" (--json, and any use as a library, tests included): nothing.
Verbosity 1 (-v) adds a line with each phase's duration as it ends; 2 (-vv) also each command run
(testbed/core/sh.py calls `command`).
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager

VIEWS = ("live", "lines", "off")
_stack: list[dict] = []                 # the running phases, outermost first
_shown = {"view": "off", "verbosity": 0, "live": None}
Text = str | Callable[[], str]          # a name or a note: fixed, or computed when shown


def said(text: Text) -> str:
    """What a name or note says now."""
    return text() if callable(text) else text


def choose(json_output: bool) -> str:
    """The view for an invocation: off under --json, live on a terminal that can redraw a line,
    else lines (a dumb terminal gets lines: rich's Live shows nothing until the end there)."""
    if json_output:
        return "off"
    dumb = os.environ.get("TERM", "").lower() in ("dumb", "unknown")
    return "live" if sys.stderr.isatty() and not dumb else "lines"


@contextmanager
def shown(view: str, verbosity: int = 0):
    """Show phases as `view` (VIEWS) with `verbosity` for the duration of the block."""
    before = dict(_shown)
    _shown.update(view=view, verbosity=verbosity, live=None)
    try:
        yield
    finally:
        _stop_live()
        _shown.update(before)


@contextmanager
def phase(name: Text):
    """A phase of long work, named as a user would understand it (e.g. "learning")."""
    entry = {"name": name, "t0": time.monotonic(), "note": ""}
    _stack.append(entry)
    _begin(entry)
    try:
        yield
    finally:
        _stack.remove(entry)
        _end(entry)


def note(text: Text) -> None:
    """How far the innermost phase is (e.g. "12 of 16 NIC ports", or a function saying it at
    each redraw): on the live line only."""
    if _stack:
        _stack[-1]["note"] = text


def command(text: str) -> None:
    """A command about to run (shown at -vv)."""
    if _shown["verbosity"] >= 2 and _shown["view"] != "off":
        first = text.strip().splitlines()[0] if text.strip() else ""
        _say(f"  $ {first[:160]}")


def rounds(n: int, what: str = "round"):
    """range(n), saying on the running phase "round k of n" as each round runs, with the time
    left once a round is done (the mean round's, counting down)."""
    done: list[float] = []

    def says(k: int, t0: float) -> str:
        if not done:
            return f"{what} {k} of {n}"
        mean = statistics.mean(done)
        left = max(mean - (time.monotonic() - t0), 0.0) + mean * (n - k)
        return f"{what} {k} of {n}, {clock(left)} left"
    for k in range(n):
        t0 = time.monotonic()
        note(lambda k=k, t0=t0: says(k + 1, t0))
        yield k
        done.append(time.monotonic() - t0)
    note("")            # the rounds are over: what follows says its own


class Steps:
    """A count of long steps ("tour 2 of 7: NAME"), each a phase, with the elapsed time and an
    ETA from the mean of the steps done so far."""

    def __init__(self, label: str, total: int):
        self.label, self.total, self.t0, self.done = label, total, time.monotonic(), []

    def title(self, k: int, name: str, started: float | None = None) -> str:
        """The step's line as of now: the time since the first step began, and the time left,
        counting down during the step (the mean of the steps done, less what this one has
        taken so far, never below zero, plus the mean for each step still to come)."""
        now = time.monotonic()
        eta = ""
        if self.done:
            mean, taken = statistics.mean(self.done), now - (now if started is None else started)
            eta = f", ETA {clock(max(mean - taken, 0.0) + mean * (self.total - k))}"
        return f"{self.label} {k} of {self.total}: {name} ({clock(now - self.t0)} elapsed{eta})"

    @contextmanager
    def step(self, name: str):
        start, k = time.monotonic(), len(self.done) + 1
        with phase(lambda: self.title(k, name, start)):
            yield
        self.done.append(time.monotonic() - start)


def clock(seconds: float) -> str:
    """A duration as a person reads it: 42s, 3m05s, 1h02m."""
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def status_text() -> str:
    """The live line: every running phase, the innermost's note and elapsed time."""
    if not _stack:
        return ""
    inner = _stack[-1]
    where = " > ".join(said(e["name"]) for e in list(_stack))
    text = said(inner["note"])
    about = f": {text}" if text else ""
    return f"{where}{about} [{clock(time.monotonic() - inner['t0'])}]"


# ---- the views ----
def _begin(entry: dict) -> None:
    view = _shown["view"]
    if view == "lines":
        _say(" > ".join(said(e["name"]) for e in _stack))
    elif view == "live" and _shown["live"] is None:
        _start_live()


def _end(entry: dict) -> None:
    if _shown["view"] != "off" and _shown["verbosity"] >= 1:
        text = said(entry["note"])
        about = f" ({text})" if text else ""
        _say(f"  {said(entry['name'])}: {time.monotonic() - entry['t0']:.1f} s{about}")
    if not _stack:
        _stop_live()


def _say(line: str) -> None:
    """A line on stderr: timestamped, plain (above the live line, if there is one)."""
    text = f"{time.strftime('%H:%M:%S')} {line}"
    live = _shown["live"]
    try:
        if live is not None:
            from rich.text import Text
            live.console.print(Text(text), soft_wrap=True)
        else:
            print(text, file=sys.stderr, flush=True)
    except OSError:          # the terminal went away (SIGHUP) or stderr's reader did
        pass


class _StatusLine:
    """The live line's renderable: a spinner and `status_text()`, computed at each redraw."""

    def __init__(self):
        from rich.spinner import Spinner
        self.spinner = Spinner("dots")

    def __rich__(self):
        from rich.table import Table
        from rich.text import Text
        grid = Table.grid(padding=(0, 1))
        grid.add_row(self.spinner, Text(status_text(), no_wrap=True, overflow="ellipsis"))
        return grid


def _start_live() -> None:
    from rich.console import Console
    from rich.live import Live
    # stdout's lines go above the status line only when stdout is that terminal too: into a
    # pipe or a file they go unchanged
    live = Live(_StatusLine(), console=Console(stderr=True), refresh_per_second=4,
                transient=True, redirect_stdout=sys.stdout.isatty(), redirect_stderr=False)
    live.start()
    _shown["live"] = live


def _stop_live() -> None:
    live, _shown["live"] = _shown["live"], None
    if live is not None:
        try:
            live.stop()
        except OSError:
            pass
