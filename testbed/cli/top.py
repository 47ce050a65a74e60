"""`hpn-testbed top`: a live view of a running fabric, in the terminal or as a page on localhost.

Every cable's load in both directions (as a bar of its emulated rate) and its queue, the faults in
place (ports down, one-direction drops) and the hosts' connections, refreshed a few times a second
from the switch ports' own counters (testbed/measure/liveview.py), so that ECMP polarizing or a
bond failing over can be watched as it happens. It reads; it changes nothing of the run.
"""
from __future__ import annotations

import argparse
import os
import time

from rich.console import Group
from rich.table import Table
from rich.text import Text

from testbed.cli.output import console, escape, print_json
from testbed.core.errors import ParamError

MIN_INTERVAL, MAX_INTERVAL = 0.1, 10.0


def add_parser(sub) -> None:
    p = sub.add_parser("top", help="a live view of a running fabric: each cable's load and queue, the "
                                   "faults in place, the flows (needs root; --web: a page on localhost)")
    p.add_argument("--fabric", metavar="RUN",
                   help="a running fabric's run id (`hpn-testbed ps`; default: the one running)")
    p.add_argument("--interval", type=interval, default=0.5, metavar="S",
                   help=f"seconds between samples, {MIN_INTERVAL}-{MAX_INTERVAL:g} (default 0.5)")
    p.add_argument("--once", action="store_true",
                   help="sample twice, --interval apart, print the view once and end")
    p.add_argument("--web", action="store_true",
                   help="serve the view as a page on 127.0.0.1 (the fabric drawn, cables coloured "
                        "by load) until Ctrl-C; only this machine can reach it")
    p.add_argument("--port", type=int, default=8765, metavar="N",
                   help="--web's port on 127.0.0.1, 1024-65535 or 0 for a free one (default 8765)")
    p.add_argument("--json", action="store_true", help="with --once: the view as a JSON envelope")
    p.set_defaults(func=cmd_top)


def interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not MIN_INTERVAL <= value <= MAX_INTERVAL:
        raise argparse.ArgumentTypeError(f"{value:g} is outside {MIN_INTERVAL}-{MAX_INTERVAL:g} s")
    return value


class Watched:
    """The run being watched: its fabric, its hosts' PIDs and nft tables, read from its state."""

    def __init__(self, run_id: str | None):
        from testbed.core import files
        from testbed.emulation.cluster import parts as cluster_parts
        from testbed.emulation.run import runlist
        from testbed.model import families
        self.state = runlist.running(run_id)
        spec = files.load_json(self.state.file("spec.json"), "run spec", files.STATE_MAX)
        if not (isinstance(spec, dict) and isinstance(spec.get("family"), str)
                and isinstance(spec.get("params"), dict)):
            raise ParamError(f"run {self.state.run_id}: its spec.json is not a fabric's spec")
        if cluster_parts.spread(self.state):
            raise ParamError(f"run {self.state.run_id} runs across servers: top reads this "
                             "machine's ports only")
        if "hosts" not in self.state.data:
            raise ParamError(f"run {self.state.run_id} is still coming up; try again once `up` "
                             "says it is up")
        self.fabric = families.from_spec(spec)

    def alive(self) -> bool:
        from testbed.emulation.run.runstate import alive
        return self.state.file("state.json").exists() and alive(self.state)

    def sample(self, ipr):
        from testbed.emulation.run.runstate import RunState
        from testbed.measure import liveview
        try:                                  # the faults of the moment: re-read each time
            data = RunState.load(self.state.file("state.json")).data
        except Exception:   # noqa: BLE001 (gone or half-written: the last reading stands)
            data = self.state.data
        return liveview.read(self.fabric, data.get("hosts", {}), list(data.get("nft_tables", [])), ipr)


def cmd_top(args) -> int:
    if args.json and not args.once:
        raise ParamError("top: --json needs --once (the live view is for a terminal or --web)")
    if args.web and args.once:
        raise ParamError("top: choose --web or --once")
    if not (args.port == 0 or 1024 <= args.port <= 65535):
        raise ParamError(f"top --port {args.port}: choose 1024-65535, or 0 for a free port")
    if os.geteuid() != 0:
        raise ParamError("top needs root (it reads a run's private state and its switch ports)")
    watched = Watched(args.fabric)
    if args.web:
        from testbed.cli import topweb
        return topweb.serve(watched, args.port, views(watched, args.interval))
    if args.once:
        return once(watched, args)
    return live(watched, args.interval)


def views(watched: Watched, every: float):
    """Views one `every` apart, as long as the run lives (a generator: the caller stops it)."""
    from pyroute2 import IPRoute

    from testbed.measure import liveview
    with IPRoute() as ipr:
        before = watched.sample(ipr)
        while watched.alive():
            time.sleep(max(0.0, every - (time.monotonic() - before.t)))
            after = watched.sample(ipr)
            yield liveview.view(watched.state.run_id, watched.fabric, before, after)
            before = after


def once(watched: Watched, args) -> int:
    view = next(views(watched, args.interval), None)
    if view is None:
        raise ParamError(f"run {watched.state.run_id} ended before it could be sampled")
    if args.json:
        print_json(view.as_dict())
    else:
        console().print(render(view, rows=len(view.cables)))
    return 0


def live(watched: Watched, every: float) -> int:
    from rich.live import Live
    out = console()
    with Live(Text("sampling ..."), console=out, refresh_per_second=8, screen=False,
              transient=False) as shown:
        try:
            for view in views(watched, every):
                shown.update(render(view, rows=max(5, out.size.height - 12)))
        except KeyboardInterrupt:
            return 0
    out.print(f"run {watched.state.run_id} ended")
    return 0


def render(view, rows: int) -> Group:
    """The terminal view: a header, the busiest cables, the faults and the flows."""
    head = Text(f"run {view.run} · {view.family} · {len(view.switches)} switches · "
                f"{len(view.cables)} cables · {len(view.flows)} flows · "
                f"{time.strftime('%H:%M:%S')}", style="bold")
    cables = Table(box=None, pad_edge=False, header_style="bold")
    for col, justify in (("cable", "left"), ("up Mbit/s", "right"), ("down Mbit/s", "right"),
                         ("load", "left"), ("queue KB", "right"), ("", "left")):
        cables.add_column(col, justify=justify, no_wrap=True)
    for c in view.busiest(rows):
        cables.add_row(escape(c.name), f"{c.up_mbps:.2f}", f"{c.down_mbps:.2f}", bar(c.load),
                       f"{c.queue_bytes / 1e3:.1f}", "[red]down[/]" if c.down else "")
    hidden = len(view.cables) - min(rows, len(view.cables))
    parts = [head, cables]
    if hidden:
        parts.append(Text(f"... {hidden} quieter cables not shown (a taller terminal shows more)",
                          style="dim"))
    parts.append(Text("faults: " + ("; ".join(view.faults) if view.faults else "none")))
    parts.append(Text("flows: " + ("; ".join(view.flows[:8]) if view.flows else "none") +
                      (f" (+{len(view.flows) - 8} more)" if len(view.flows) > 8 else "")))
    return Group(*parts)


def bar(load: float, width: int = 20) -> str:
    """A load bar: green below half the cable's rate, yellow below 90%, red from there."""
    filled = min(width, round(load * width))
    colour = "green" if load < 0.5 else "yellow" if load < 0.9 else "red"
    return f"[{colour}]{'█' * filled}[/]{'·' * (width - filled)} {load * 100:3.0f}%"
