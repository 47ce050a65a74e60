"""`hpn-testbed trace`: the hop-by-hop path of a 5-tuple on a running fabric, read from its switches."""
from __future__ import annotations

import argparse
import os

from rich.markup import escape

from testbed.cli.output import console, print_json, table
from testbed.core import files
from testbed.core.errors import ParamError


def add_parser(sub) -> None:
    tr = sub.add_parser("trace", help="the hop-by-hop path of a 5-tuple, read from the switches")
    tr.add_argument("--fabric", metavar="RUN",
                    help="a running fabric's run id (`hpn-testbed ps`; default: the one running)")
    tr.add_argument("src", help="source NIC: IP, NIC name (host-nI) or host")
    tr.add_argument("dst", help="destination NIC")
    tr.add_argument("--proto", choices=["tcp", "udp"], default="tcp")
    tr.add_argument("--sport", type=port_number, default=40000, help="0-65535 (default 40000)")
    tr.add_argument("--dport", type=port_number, default=5201, help="0-65535 (default 5201)")
    tr.add_argument("--json", action="store_true")
    tr.set_defaults(func=cmd_trace)


def port_number(text: str) -> int:
    """A TCP/UDP port for argparse: refused with one line, before any switch is asked."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is outside 0-65535")
    return port


def cmd_trace(args) -> int:
    from testbed.emulation.hosts import AttachedHost
    from testbed.emulation.run import runlist
    from testbed.emulation.trace import local_appctl, trace
    from testbed.model import families
    if os.geteuid() != 0:
        raise ParamError("trace needs root (it reads a run's private state and its switches)")
    state = runlist.running(args.fabric)
    spec = files.load_json(state.file("spec.json"), "run spec", files.STATE_MAX)
    if not (isinstance(spec, dict) and isinstance(spec.get("family"), str)
            and isinstance(spec.get("params"), dict)):
        raise ParamError(f"run {state.run_id}: its spec.json is not a fabric's spec")
    fab = families.from_spec(spec)
    src, dst = fab.nic(args.src), fab.nic(args.dst)
    from testbed.emulation.cluster import parts as cluster_parts
    spread = cluster_parts.spread(state)
    if not spread and "hosts" not in state.data:
        raise ParamError(f"run {state.run_id} is still coming up (its hosts are not recorded yet); "
                         "trace it once `up` says it is up")
    if spread:                         # a run across servers: ask each node where it runs
        hosts, appctl = cluster_parts.attached(state)
    else:
        hosts, appctl = {name: AttachedHost(pid) for name, pid in state.data["hosts"].items()}, local_appctl
    hops = trace(fab, hosts, src, dst, args.proto, args.sport, args.dport, appctl)
    warning = changing(controller_status(state), hops)
    if args.json:
        print_json({"src": src.ip, "dst": dst.ip, "proto": args.proto, "sport": args.sport,
                    "dport": args.dport, "routes_changing": warning,
                    "hops": [{"switch": h.switch, "in_port": h.in_port, "out_port": h.out_port}
                             for h in hops]})
    else:
        con = console()
        con.print(table(f"{src.ip}:{args.sport} -> {dst.ip}:{args.dport} {args.proto}",
                        ["hop", "switch", "in port", "out port"],
                        [(i + 1, h.switch, h.in_port, h.out_port if h.out_port else "drop")
                         for i, h in enumerate(hops)]))
        if warning:
            con.print(f"[yellow]routes are still changing: {escape(warning)}; trace again in a "
                      "moment[/yellow]")
    return 0 if hops and hops[-1].out_port else 1


def controller_status(state):
    """The controller's last status of the run (testbed/model/contract.py), or None (a bare
    fabric run by a user's app writes none)."""
    from testbed.model.contract import ControllerStatus
    try:
        data = files.load_json(state.file("status.json"), "controller status", files.STATE_MAX)
    except ParamError:
        return None
    status = ControllerStatus.from_json(data)
    return status if status.written else None


def changing(status, hops) -> str | None:
    """Why the traced path may not be the one the fabric settles on, or None: the controller
    has rules still to recompute, or a hop leaves by a port the switches report down (a fault
    the rules have not caught up with)."""
    if status is None:
        return None
    down = set(status.down)
    through = [f"{h.switch} port {h.out_port}" for h in hops if h.out_port and (h.switch, h.out_port) in down]
    if through:
        return f"the path leaves by {', '.join(through)}, which is down"
    if not status.settled:
        return "the controller has not settled since the last change (a port went down or up)"
    return None
