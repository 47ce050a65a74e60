"""`hpn-testbed link impair PORT` and `link clear PORT`: delay, jitter, loss and a rate cap on a
port of a running fabric, from another terminal (containerlab's `tools netem set`), found like
`trace` finds it: `--fabric RUN`, by default the one fabric running. The impairment is the
`impair` fault kind's (testbed/emulation/faults/impair.py); here it stays until `link clear` or
the fabric's teardown."""
from __future__ import annotations

import os

from testbed.cli.output import console, print_json
from testbed.core import files
from testbed.core.errors import ParamError

FABRIC_HELP = "the running fabric (`hpn-testbed ps`; default: the one running)"
PORT_HELP = ("the port whose sending side is impaired: a host port (p0s0h0-n0p0) or a switch "
             "port (p0s0r0t0-eth3)")
METAVARS = {"delay": "TIME", "jitter": "TIME", "loss": "PERCENT", "rate": "RATE"}


def add_parser(sub) -> None:
    link = sub.add_parser("link", help="impair a port of a running fabric: delay, jitter, loss, rate "
                                       "(netem; without it loss and rate only; needs root)")
    cmds = link.add_subparsers(dest="link_command", required=True)
    imp = cmds.add_parser("impair", help="set delay, jitter, loss or a rate cap on a port's sending "
                                         "side (replaces what it had)")
    imp.add_argument("port", metavar="PORT", help=PORT_HELP)
    from testbed.emulation.faults.impair import Impair
    for arg in Impair.args[1:]:          # the fault kind's own words: --delay, --jitter, --loss, --rate
        imp.add_argument(f"--{arg.name}", default="", metavar=METAVARS[arg.name],
                         help=arg.help.replace("%", "%%"))
    clear = cmds.add_parser("clear", help="put a port back as the fabric's bring-up shaped it")
    clear.add_argument("port", metavar="PORT", help="the port to clear")
    for p in (imp, clear):
        p.add_argument("--fabric", metavar="RUN", help=FABRIC_HELP)
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=cmd_link)


def cmd_link(args) -> int:
    from testbed.emulation.faults import impair
    from testbed.emulation.net import impair as text
    imp = text.parse(args.delay, args.jitter, args.loss, args.rate) if args.link_command == "impair" else None
    if os.geteuid() != 0:
        raise ParamError(f"link {args.link_command} needs root (tc and nft in the fabric's namespaces)")
    if imp is not None:
        impair.check(imp)          # what this kernel cannot do: one line, nothing touched
    state, fabric = running(args.fabric)
    port = impair.port_of(fabric, args.port)
    queue_bytes = state.data["about"].get("queue_bytes") or _default_queue()
    run = on_port(state, port)
    if imp is None:
        impair.clear_on(port, state.run_id, queue_bytes, run)
        said = f"{port.intf} is as bring-up shaped it ({port.link_mbit:g} Mbit/s, no impairment)"
    else:
        impair.set_on(port, imp, state.run_id, queue_bytes, run,
                      lambda table: state.add_outside("nft_tables", table))
        said = (f"{port.intf} sends with {imp.describe()} ({text.mechanism(imp, impair.machine()['netem'])}"
                f"; `hpn-testbed link clear {port.intf}` undoes it)")
    if args.json:
        print_json({"run": state.run_id, "port": port.intf, "node": port.node,
                    "impairment": None if imp is None else imp.describe()})
    else:
        console().print(said)
    return 0


def running(run_id: str | None):
    """The running fabric's state and model (ParamError: none, several, spread over servers)."""
    from testbed.emulation.cluster import parts as cluster_parts
    from testbed.emulation.run import runlist
    from testbed.model import families
    state = runlist.running(run_id)
    if cluster_parts.spread(state):
        raise ParamError(f"link: run {state.run_id} is spread over servers; impair one machine's "
                         "fabric only (or use `fault impair` in its shell)")
    if "hosts" not in state.data:
        raise ParamError(f"run {state.run_id} is still coming up; impair it once `up` says it is up")
    spec = files.load_json(state.file("spec.json"), "run spec", files.STATE_MAX)
    if not (isinstance(spec, dict) and isinstance(spec.get("family"), str)
            and isinstance(spec.get("params"), dict)):
        raise ParamError(f"run {state.run_id}: its spec.json is not a fabric's spec")
    return state, families.from_spec(spec)


def on_port(state, port):
    """A runner of scripts where `port` lives: its host's namespace, or the root namespace."""
    from testbed.core import sh
    from testbed.emulation.hosts import AttachedHost
    if port.on_switch:
        return lambda script: sh.run(["bash", "-c", "set -e\n" + script])
    return AttachedHost(state.data["hosts"][port.node]).run_script


def _default_queue() -> int:
    from testbed.emulation.build import QUEUE_BYTES
    return QUEUE_BYTES
