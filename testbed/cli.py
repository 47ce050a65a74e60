"""hpn-testbed: the command line.

Bad input becomes one clear line and exit status 2, before anything is created; a run-time
failure exits 1; SIGTERM and Ctrl-C tear down whatever was built.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys

from testbed.core.errors import ParamError, TestbedError

FAMILY_HELP = "hpn | mpft | mrft | clos3"


def _console():
    from rich.console import Console
    return Console()


def _table(title, columns, rows):
    from rich.table import Table
    table = Table(title=title)
    for c in columns:
        table.add_column(c)
    for r in rows:
        table.add_row(*[str(x) for x in r])
    return table


def _print_json(data) -> None:
    print(json.dumps(data, indent=2, default=str))


# ---- doctor ----
def cmd_doctor(args) -> int:
    from testbed.emulation import system
    feats = system.features()
    report = {
        "features": feats,
        "paths": {"ovs_datapath": system.datapath(), "host_bond": system.bond_backend(),
                  "one_way_fault": system.one_way_fault_backend(),
                  "impairments": "netem" if feats["netem"] else "none (no sch_netem)"},
        "versions": system.versions(),
        "ovs_running": system.ovs_running(),
    }
    missing = [name for name, ok in (("Open vSwitch (ovs-vsctl)", report["versions"]["ovs"]),
                                     ("Mininet", report["versions"]["mininet"]),
                                     ("os-ken", report["versions"]["os_ken"]),
                                     ("iperf3", report["versions"]["iperf3"]),
                                     ("HTB (sch_htb)", feats["htb"]),
                                     ("multipath routes or bonding",
                                      feats["multipath_routes"] or feats["bonding"])) if not ok]
    if not report["ovs_running"]:
        missing.append("a running Open vSwitch (run `make setup` or ovs-ctl start)")
    report["missing"] = missing
    if args.json:
        _print_json(report)
    else:
        con = _console()
        con.print(_table("kernel and tools", ["feature", "here"],
                         [(k, "yes" if v else "no") for k, v in feats.items()]))
        con.print(_table("paths this machine takes", ["part", "path"], report["paths"].items()))
        con.print(_table("versions", ["component", "version"],
                         [(k, v or "missing") for k, v in report["versions"].items()]))
        for m in missing:
            con.print(f"[red]missing:[/red] {m}")
    return 1 if missing else 0


# ---- topo ----
def cmd_topo_budget(args) -> int:
    from testbed.model import budget
    data = budget.budget(args.family, args.preset)
    if args.json:
        _print_json(data)
    else:
        _console().print(budget.render(data))
    return 0


def cmd_topo_show(args) -> int:
    from testbed.model import make_fabric
    fab = make_fabric(args.family, args.set)
    summary = fab.summary()
    nics = fab.nics()
    far = max(nics, key=lambda n: (n.host != nics[0].host, fab.equal_cost_paths(nics[0], n)))
    summary["equal_cost_paths"] = {"src": nics[0].name, "dst": far.name,
                                   "paths": fab.equal_cost_paths(nics[0], far)}
    if args.png:
        from testbed.model import draw
        draw.draw(fab, args.png)
        summary["png"] = args.png
    if args.json:
        _print_json(summary)
        return 0
    con = _console()
    con.print(f"[bold]{fab.family}[/bold]: {summary['hosts']} hosts, {summary['nics']} NICs, "
              f"{summary['host_ports']} host ports, {summary['switches']} switches, "
              f"{summary['links']['host']} host links + {summary['links']['switch']} switch links")
    con.print(_table("tiers", ["role", "switches", "ports", "down Gb/s", "up Gb/s", "oversubscription"],
                     [(r, t["switches"], t["ports_per_switch"], t["down_gbps"], t["up_gbps"],
                       f"{t['oversubscription']}:1" if t["oversubscription"] else "-")
                      for r, t in summary["tiers"].items()]))
    e = summary["equal_cost_paths"]
    con.print(f"equal-cost paths {e['src']} -> {e['dst']}: {e['paths']}")
    if args.png:
        con.print(f"picture: {args.png}")
    return 0


# ---- up / clean ----
def _routing(args) -> dict:
    """The routing options of `up` (see testbed/model/policies), checked before anything is built."""
    routing = {}
    for key in ("ecmp", "core", "policy"):
        if getattr(args, key, None):
            routing[key] = getattr(args, key)
    pairs = getattr(args, "pair", None) or []
    if pairs:
        routing["matrix"] = []
        for pair in pairs:
            src, sep, dst = pair.partition(",")
            if not sep:
                raise ParamError(f"--pair {pair!r}: expected SRC,DST")
            routing["matrix"].append([src.strip(), dst.strip()])
    if getattr(args, "family", None):
        from testbed.model import make_fabric
        from testbed.model.policies import normalize
        normalize(make_fabric(args.family, args.set), routing)   # ParamError on a bad option
    return routing


def cmd_up(args) -> int:
    from testbed.emulation.build import Emulation, Options
    from testbed.measure import checks
    from testbed.model import make_fabric
    fab = make_fabric(args.family, args.set)      # validated before anything is created
    with Emulation(fab, Options(routing=_routing(args), detector=args.detector)) as emu:
        info = emu.describe()
        results = []
        if args.check:
            results = checks.run_all(emu)
            info["checks"] = [c.__dict__ for c in results]
        if args.json:
            _print_json(info)
        else:
            con = _console()
            con.print(f"[bold]{fab.family}[/bold] up in {info['timings_s']['ready']:.1f} s: "
                      f"{len(fab.switches)} switches, {len(fab.hosts)} hosts; OVS datapath "
                      f"[cyan]{emu.datapath}[/cyan], host bond [cyan]{info['bond']}[/cyan], run {emu.run_id}")
            if results:
                con.print(_table("checks", ["check", "result", "detail"],
                                 [(c.name, "[green]pass[/green]" if c.passed else "[red]FAIL[/red]",
                                   c.detail) for c in results]))
        if args.cli:
            from mininet.cli import CLI
            CLI(emu.net)
        elif not args.check:
            print("up; press Ctrl-C to tear down", file=sys.stderr)
            signal.pause()
    return 0 if all(c.passed for c in results) else 1


def cmd_trace(args) -> int:
    from testbed.emulation import runstate
    from testbed.emulation.hosts import AttachedHost
    from testbed.emulation.trace import trace
    from testbed.model import make_fabric
    states = {s.run_id: s for s in runstate.runs() if runstate.alive(s)}
    if args.fabric not in states:
        raise ParamError(f"no running fabric {args.fabric!r}; running: {', '.join(states) or 'none'}")
    state = states[args.fabric]
    spec = json.loads((state.dir / "spec.json").read_text())
    fab = make_fabric(spec["family"], spec["params"])
    src, dst = fab.nic(args.src), fab.nic(args.dst)
    hosts = {name: AttachedHost(pid) for name, pid in state.data["hosts"].items()}
    hops = trace(fab, hosts, src, dst, args.proto, args.sport, args.dport)
    if args.json:
        _print_json({"src": src.ip, "dst": dst.ip, "proto": args.proto, "sport": args.sport,
                     "dport": args.dport, "hops": [h.__dict__ for h in hops]})
    else:
        _console().print(_table(f"{src.ip}:{args.sport} -> {dst.ip}:{args.dport} {args.proto}",
                                ["hop", "switch", "in port", "out port"],
                                [(i + 1, h.switch, h.in_port, h.out_port if h.out_port else "drop")
                                 for i, h in enumerate(hops)]))
    return 0 if hops and hops[-1].out_port else 1


def cmd_list(args) -> int:
    import scenarios
    found = scenarios.all_scenarios()
    rows = [(name, cls.claim, cls.title, "tour" if name in scenarios.TOUR else "")
            for name, cls in found.items()]
    if args.json:
        _print_json([dict(zip(("name", "claim", "title", "tour"), r)) for r in rows])
    else:
        _console().print(_table("scenarios", ["name", "claim", "what it shows", ""], rows))
    return 0


def cmd_run(args) -> int:
    from pathlib import Path

    import scenarios
    names = args.names or scenarios.TOUR
    if not names:
        raise ParamError("no scenarios yet")
    chosen = [scenarios.get(n) for n in names]          # unknown names fail before anything runs
    quick = args.quick or not args.names                 # the tour runs short versions
    results = []
    con = _console()
    for scenario in chosen:
        if not args.json:
            con.print(f"[bold]{scenario.name}[/bold] ({scenario.claim}): {scenario.title}")
        result = scenario.execute(Path(args.out), quick=quick)
        results.append(result)
        if not args.json:
            con.print(f"  paper: {result.paper}\n  expected here: {result.expectation}\n"
                      f"  measured: {result.measured}\n  verdict: {_styled(result.verdict)}")
    if args.json:
        from dataclasses import asdict
        _print_json([asdict(r) for r in results])
    elif len(results) > 1:
        con.print(_table("hpn-testbed tour (full reports above and in --out)",
                         ["claim", "scenario", "paper", "scaled expectation", "measured", "verdict"],
                         [(r.claim, r.scenario, _short(r.paper), _short(r.expectation), _short(r.measured),
                           _styled(r.verdict)) for r in results]))
    return 0 if all(r.verdict == "reproduced" for r in results) else 1


def _short(text: str, limit: int = 60) -> str:
    """The first clause of a report's text, for the one-table summary."""
    head = text.split("; ")[0]
    return head if len(head) <= limit else head[:limit - 1].rstrip() + "…"


def _styled(verdict: str) -> str:
    colour = {"reproduced": "green", "invalid": "yellow"}.get(verdict, "red")
    return f"[{colour}]{verdict}[/{colour}]"


def cmd_clean(args) -> int:
    from testbed.emulation import runstate
    done = runstate.clean(include_live=args.all)
    for line in done:
        print(line)
    if not done:
        print("nothing to clean")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hpn-testbed", description=(
        "Emulate the networks that train large language models (Alibaba HPN, DeepSeek MPFT/MRFT, "
        "a three-tier Clos) on Mininet and Open vSwitch with an os-ken controller."))
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("doctor", help="what this machine offers and which path each part takes")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_doctor)

    t = sub.add_parser("topo", help="the fabric model: port budgets and pictures, nothing built")
    tsub = t.add_subparsers(dest="topo_command", required=True)
    b = tsub.add_parser("budget", help="full-scale port budgets (claims B1-B4)")
    b.add_argument("family", choices=["hpn", "mpft"])
    b.add_argument("--preset", default="paper", choices=["paper"])
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=cmd_topo_budget)
    s = tsub.add_parser("show", help="counts per tier, oversubscription, equal-cost paths, a picture")
    _fabric_args(s)
    s.add_argument("--png", metavar="FILE", help="draw the fabric to FILE")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_topo_show)

    u = sub.add_parser("up", help="bring a fabric up on Open vSwitch (needs root)")
    _fabric_args(u)
    u.add_argument("--ecmp", choices=["polarized", "seeded"], help="select-group hashing (default seeded)")
    u.add_argument("--policy", choices=["ecmp", "static", "adaptive"],
                   help="routing policy: ECMP hashing (default), static per destination, or "
                        "adaptive (the controller moves flows off hot uplinks)")
    u.add_argument("--core", choices=["per-port", "ecmp"],
                   help="core tier: per-port rules (default on hpn) or ECMP")
    u.add_argument("--pair", action="append", metavar="SRC,DST",
                   help="a flow of the known traffic matrix for --policy static (repeatable; NICs "
                        "by IP, host-nI or host)")
    u.add_argument("--detector", action="store_true",
                   help="run the host-side probe-based port detector in every dual-ToR host (claim C4)")
    u.add_argument("--cli", action="store_true", help="drop into the Mininet CLI")
    u.add_argument("--check", action="store_true",
                   help="run the bring-up checks, print a summary, tear down; exit 0 only if all pass")
    u.add_argument("--json", action="store_true")
    u.set_defaults(func=cmd_up)

    tr = sub.add_parser("trace", help="the hop-by-hop path of a 5-tuple, read from the switches")
    tr.add_argument("--fabric", required=True, metavar="RUN", help="a running fabric's run id (see `up`)")
    tr.add_argument("src", help="source NIC: IP, NIC name (host-nI) or host")
    tr.add_argument("dst", help="destination NIC")
    tr.add_argument("--proto", choices=["tcp", "udp"], default="tcp")
    tr.add_argument("--sport", type=int, default=40000)
    tr.add_argument("--dport", type=int, default=5201)
    tr.add_argument("--json", action="store_true")
    tr.set_defaults(func=cmd_trace)

    ls = sub.add_parser("list", help="every scenario with the claim it reproduces")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_list)

    r = sub.add_parser("run", help="run scenarios (needs root); with no NAME, the tour of headline claims")
    r.add_argument("names", nargs="*", metavar="NAME", help="scenarios to run (see `list`)")
    r.add_argument("--out", default="out", help="where JSON and PNG reports go (default ./out)")
    r.add_argument("--quick", action="store_true", help="the short version (what the tour runs)")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_run)

    c = sub.add_parser("clean", help="remove what earlier testbed runs left behind (only that)")
    c.add_argument("--all", action="store_true", help="also runs whose process is still alive")
    c.set_defaults(func=cmd_clean)
    return p


def _fabric_args(parser) -> None:
    parser.add_argument("family", help=FAMILY_HELP)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a model parameter (repeatable), e.g. --set hosts=4")


def _terminate(signum, frame):
    raise KeyboardInterrupt   # unwinds through the context managers, which tear down


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return args.func(args)
    except ParamError as e:
        print(f"hpn-testbed: {e}", file=sys.stderr)
        return e.exit_status
    except TestbedError as e:
        print(f"hpn-testbed: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("hpn-testbed: interrupted; cleaned up", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
