"""`hpn-testbed up`: bring a fabric up, check it, explore it, tear it down."""
from __future__ import annotations

import sys
import time

from testbed.cli.output import console, escape, markup, print_json, table
from testbed.cli.topo import add_fabric_args, fabric_settings
from testbed.core import progress
from testbed.core.errors import ParamError


def add_parser(sub) -> None:
    from testbed.measure.checks import ALL_PAIRS_UP_TO
    from testbed.model import policies
    from testbed.model.routing import ECMP_MODES
    u = sub.add_parser("up", help="bring a fabric up on Open vSwitch (needs root)")
    add_fabric_args(u)
    u.add_argument("--ecmp", choices=ECMP_MODES, help="select-group hashing (default seeded)")
    u.add_argument("--policy", metavar="NAME",   # checked against the registry: it may grow
                   help="routing policy: " + "; ".join(f"{n}: {policies.get(n).summary}"
                                                        for n in policies.names()))
    u.add_argument("--core", choices=tuple(policies.CORE_MODES),
                   help="core tier: per-port rules (default on hpn) or ECMP")
    u.add_argument("--pair", action="append", metavar="SRC,DST",
                   help="a flow of the known traffic matrix for --policy static (repeatable; NICs "
                        "by IP, host-nI or host)")
    u.add_argument("--miswire", action="append", default=[], metavar="PORT_A,PORT_B",
                   help="swap the cables of two switch ports of one tier, e.g. "
                        "p0s0r0t0-eth3,p0s0r1t0-eth3 (repeatable; claim C9: --check's wiring "
                        "check names them)")
    u.add_argument("--detector", action="store_true",
                   help="run the host-side probe-based port detector in every dual-ToR host (claim C4)")
    u.add_argument("--cli", action="store_true",
                   help="drop into the Mininet CLI, with the testbed's commands (`help` lists them)")
    u.add_argument("--check", action="store_true",
                   help="run the bring-up checks, print a summary, tear down; exit 0 only if all pass")
    u.add_argument("--full", action="store_true",
                   help=f"with --check: ping every routed NIC pair (the default above "
                        f"{ALL_PAIRS_UP_TO} NICs is a sample covering every NIC and rail pair)")
    add_controller_args(u)
    add_servers_arg(u)
    add_keep_arg(u)
    u.add_argument("--json", action="store_true")
    u.set_defaults(func=cmd_up)


def add_controller_args(parser) -> None:
    """--controller-app, --beside, --controller (testbed/emulation/control/apps.py)."""
    parser.add_argument("--controller-app", metavar="FILE.py|osken:MODULE",
                        help="run your own os-ken (Ryu API) app in our launcher instead of our "
                             "controller: a bare fabric (hosts on-link in one subnet, no gateway; "
                             "the app does everything), e.g. examples/l2_switch.py (a learning "
                             "switch) on a loop-free topology file (examples/tree.toml); --check "
                             "skips the wiring check (docs/extending.md)")
    parser.add_argument("--beside", action="store_true",
                        help="with --controller-app: run it beside ours in one process (ours "
                             "keeps tables 0-1 and the groups; what table 1 does not route goes "
                             "to table 2, the app's; it must accept OpenFlow 1.5)")
    parser.add_argument("--controller", metavar="TARGET",
                        help="a remote controller: refused (tcp: is an open port; mutual TLS is "
                             "not offered yet); use --controller-app")


def add_servers_arg(parser) -> None:
    from testbed.cli.topo import servers_arg
    parser.add_argument("--servers", type=servers_arg, metavar="A,B[,...]",
                        help="run the fabric across these servers (Mininet Cluster Edition; "
                             "`hpn-testbed servers up N` makes local ones): whole segments, host "
                             "groups or pods on each, cut links as VXLAN")


def add_keep_arg(parser) -> None:
    parser.add_argument("--keep", action="store_true",
                        help="keep each run's directory (controller log, iperf3 output) after the "
                             "teardown, under /var/tmp/hpn-testbed (always kept when a run fails)")


def keep_requested(args) -> None:
    """--keep: every run of this process keeps its directory (testbed/emulation/run/keep.py)."""
    if getattr(args, "keep", False):
        import os
        os.environ["HPN_KEEP"] = "1"


def servers_of(args) -> tuple[str, ...]:
    """The servers `--servers` names (none: this machine); a bare count is refused."""
    servers = getattr(args, "servers", None)
    if isinstance(servers, int):
        raise ParamError(f"--servers {servers}: name the servers (e.g. hpn-srv1,hpn-srv2; "
                         "`hpn-testbed servers list`)")
    return tuple(servers or ())


def split_settings(args) -> tuple[dict, dict]:
    """`--set` (after the --preset) as (the family's parameters, the chosen policy's options):
    a key the family does not have but `--policy` declares is a routing option, so that
    `--policy adaptive --set interval=0.5` sets the policy's interval."""
    import dataclasses

    from testbed.model.families import get
    from testbed.model.policies import registry
    settings = fabric_settings(args)
    fields = {f.name for f in dataclasses.fields(get(args.family).params)}
    policy = registry.get(getattr(args, "policy", None) or registry.names()[0])
    own = {o.name for o in policy.options} - fields
    return ({k: v for k, v in settings.items() if k not in own},
            {k: v for k, v in settings.items() if k in own})


def routing_options(args, fabric, policy_settings: dict | None = None) -> dict:
    """The routing options of `up` (see testbed/model/policies), checked before anything is built:
    --ecmp, --core, --policy, --pair and the policy's own options given with --set."""
    from testbed.model.policies import normalize
    from testbed.model.policies.options import check_routes
    routing = {key: getattr(args, key) for key in ("ecmp", "core", "policy") if getattr(args, key, None)}
    routing.update(policy_settings or {})
    pairs = getattr(args, "pair", None) or []
    if pairs:
        routing["matrix"] = []
        for pair in pairs:
            src, sep, dst = pair.partition(",")
            if not sep:
                raise ParamError(f"--pair {pair!r}: expected SRC,DST")
            routing["matrix"].append([src.strip(), dst.strip()])
    check_routes(fabric, normalize(fabric, routing))   # ParamError on a bad option or route
    return routing


def refuse_meaningless(args) -> None:
    """Combinations that would silently do nothing, refused with one line (exit 2)."""
    if args.full and not args.check:
        raise ParamError("--full: only with --check (it widens the reachability check)")
    if args.json and args.cli:
        raise ParamError("--json with --cli: the CLI is for a person; use one of them")


def controller_app_of(args):
    """The user's controller app `up` runs (None: ours alone), checked (ParamError, one line)."""
    from testbed.emulation.control import apps as controller_app
    if getattr(args, "controller", None):
        controller_app.remote_controller(args.controller)
    app = controller_app.checked(getattr(args, "controller_app", None), getattr(args, "beside", False))
    if app is not None and servers_of(args):
        raise ParamError(f"--controller-app {app.label}: not with --servers yet (a user's app runs "
                         "on this machine only)")
    ours_only = [f"--{name}" for name in ("policy", "ecmp", "core", "pair", "miswire", "detector")
                 if getattr(args, name, None)]
    if app is not None and not app.beside and ours_only:
        raise ParamError(f"--controller-app {app.label}: {', '.join(ours_only)} need our controller "
                         "(add --beside to run the app beside ours)")
    return app


def prepare(args):
    """(fabric, options) of an `up`, every argument checked against the model, with no root and
    nothing created (ParamError, one line): what `up` does before it builds anything."""
    from testbed.emulation.build import Options
    from testbed.emulation.net import system
    from testbed.model import make_fabric, wiring
    system.check_settings()            # HPN_MTU, HPN_OVS_SNDBUF
    refuse_meaningless(args)
    settings, policy_settings = split_settings(args)
    fab = make_fabric(args.family, settings)
    if args.detector and not any(len(n.ports) > 1 for n in fab.nics()):
        raise ParamError(f"--detector: no NIC of this {fab.family} fabric has two ports (the "
                         "detector takes a silent port out of a dual-ported NIC's bond)")
    wiring.parse_swaps(fab, list(args.miswire))
    routing = routing_options(args, fab, policy_settings)
    return fab, Options(routing=routing, detector=args.detector, miswire=tuple(args.miswire),
                        controller_app=controller_app_of(args))


def _send_buffer(info: dict) -> str:
    """The userspace datapath's send buffer, if this run raised it (sendbuf.py)."""
    size = info.get("ovs_send_buffer")
    return f" (send buffer {size / 1e6:.1f} MB)" if size else ""


def _nic_link(info: dict) -> str:
    """On the multipath fallback, the link type that holds each dual-ported NIC's address."""
    kind = info.get("nic_link")
    return f" (NICs on {kind} links)" if kind else ""


def cmd_up(args) -> int:
    from testbed.emulation.factory import make_emulation
    from testbed.measure import bringup
    fab, options = prepare(args)        # validated before anything is created
    keep_requested(args)
    with make_emulation(fab, options, servers=servers_of(args)) as emu:
        info = emu.describe()
        results = []
        if args.check:
            with progress.phase("checks"):
                results = bringup.run_all(emu, full=args.full)
            emu.check_whole()     # PartLost if a switch or the controller was lost meanwhile
            info["checks"] = [c.__dict__ for c in results]
        if args.json:
            print_json(info)
        else:
            con = console()
            con.print(f"[bold]{escape(fab.family)}[/bold] up in {info['timings_s']['ready']:.1f} s: "
                      f"{len(fab.switches)} switches, {len(fab.hosts)} hosts; OVS datapath "
                      f"[cyan]{emu.datapath}[/cyan]{_send_buffer(info)}, "
                      f"host bond [cyan]{info['bond']}[/cyan]{_nic_link(info)}, CPU precedence "
                      f"[cyan]{info.get('cpu_precedence') or 'none'}[/cyan], run {emu.run_id}")
            if emu.controller.app is not None:
                app = emu.controller.app.describe()
                con.print(f"controller app {app['app']} ({app['class']}), {app['mode']}")
            if results:
                con.print(table("checks", ["check", "result", "detail"],
                                [(c.name, _verdict(c), c.detail) for c in results]))
        if args.cli:   # leaving it (exit, Ctrl-D, SIGTERM, SIGHUP) ends this block: teardown
            from testbed.cli.shell.cli import run_shell
            run_shell(emu)
        elif not args.check:
            print("up; press Ctrl-C to tear down", file=sys.stderr)
            while True:   # not signal.pause(): a signal just before it would leave it blocked for ever
                time.sleep(1)
    return 0 if all(c.passed for c in results) else 1


def _verdict(check) -> str:
    if check.figures.get("skipped"):
        return markup("[yellow]skip[/yellow]")
    return markup("[green]pass[/green]" if check.passed else "[red]FAIL[/red]")
