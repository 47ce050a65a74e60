"""`hpn-testbed topo budget|show`: the fabric model, nothing built."""
from __future__ import annotations

from testbed.cli.output import check_figure, console, escape, print_json, table
from testbed.core.errors import TestbedError


def add_custom_arg(parser) -> None:
    """--custom FILE.py (repeatable): read before the parser is built (testbed/cli/__init__.py),
    so this only documents it and lets argparse accept it."""
    parser.add_argument("--custom", action="append", default=[], metavar="FILE.py",
                        help="load a plug-in first: a Python file that registers families (and "
                             "other kinds) with their registries' register(); repeatable")


def add_fabric_args(parser) -> None:
    from testbed.model.families import registered
    add_custom_arg(parser)
    parser.add_argument("family", choices=list(registered()), metavar="FAMILY",
                        help=" | ".join(registered()))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a model parameter (repeatable), e.g. --set hosts=4")
    from testbed.model.families import preset_names
    parser.add_argument("--preset", choices=preset_names(),
                        help="a named shape (the family's presets: segment = one full HPN "
                             "segment, 1,088 NICs); --set overrides its parameters")


def fabric_settings(args) -> dict:
    """The fabric's parameters: the --preset's, then each --set over them."""
    from testbed.model.families import get
    from testbed.model.params import parse_settings
    return {**get(args.family).preset(args.preset), **parse_settings(args.set)}


def add_parser(sub) -> None:
    from testbed.model.families import budgeted
    t = sub.add_parser("topo", help="the fabric model: port budgets and pictures, nothing built")
    tsub = t.add_subparsers(dest="topo_command", required=True)
    b = tsub.add_parser("budget", help="full-scale port budgets (claims B1-B4)")
    b.add_argument("family", choices=list(budgeted()))
    b.add_argument("--preset", default="paper",
                   choices=sorted({p for f in budgeted().values() for p in f.budget.presets}))
    b.add_argument("--json", action="store_true")
    add_custom_arg(b)
    b.set_defaults(func=cmd_topo_budget)
    s = tsub.add_parser("show", help="counts per tier, oversubscription, equal-cost paths, a picture")
    add_fabric_args(s)
    s.add_argument("--png", metavar="FILE", help="draw the fabric to FILE (.png, .svg or .pdf: the "
                                                 "extension names the format)")
    s.add_argument("--servers", type=servers_arg, metavar="N|A,B,...",
                   help="place the fabric on N servers (or these named ones): whole segments, host "
                        "groups or pods per server; prints the placement and the cut links")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_topo_show)


def servers_arg(text: str):
    """--servers: a count (topo show) or server names A,B,... (up, run)."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    import argparse

    from testbed.core.errors import ParamError
    from testbed.model.placement import server_names
    try:
        return server_names(text)
    except ParamError as e:     # argparse turns this into its one-line error, exit 2
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"--servers {text!r}: ")) from None


def cmd_topo_budget(args) -> int:
    from testbed.model import budget
    data = budget.budget(args.family, args.preset)
    if args.json:
        print_json(data)
    else:
        console().print(budget.render(data))
    return 0


def cmd_topo_show(args) -> int:
    from testbed.model import make_fabric
    if args.png is not None:
        check_figure("--png", args.png)     # before the fabric is built or drawn
    fab = make_fabric(args.family, fabric_settings(args))
    summary = fab.summary()
    nics = fab.nics()
    far = max(nics, key=lambda n: (n.host != nics[0].host, fab.equal_cost_paths(nics[0], n)))
    summary["equal_cost_paths"] = {"src": nics[0].name, "dst": far.name,
                                   "paths": fab.equal_cost_paths(nics[0], far)}
    placement = None
    if getattr(args, "servers", None) is not None:     # ParamError before the picture is written
        from testbed.model.placement import place
        placement = place(fab, args.servers)
        summary["placement"] = placement.summary(fab)
    if args.png is not None:
        from testbed.model import draw
        try:
            draw.draw(fab, args.png)
        except OSError as e:    # what the check above cannot foresee (e.g. a pseudo-filesystem)
            raise TestbedError(f"--png {args.png!r}: {e.strerror or e}") from None
        summary["png"] = args.png
    if args.json:
        print_json(summary)
        return 0
    con = console()
    con.print(f"[bold]{escape(fab.family)}[/bold]: {summary['hosts']:,} hosts, {summary['nics']:,} NICs, "
              f"{summary['host_ports']:,} host ports, {summary['switches']:,} switches,\n"
              f"{summary['links']['host']:,} host links + {summary['links']['switch']:,} switch links")
    # short headers and rounded figures: the table fits 80 columns
    con.print(table("tiers", ["role", "switches", "ports", "down Gb/s", "up Gb/s", "oversub."],
                    [(r, t["switches"], t["ports_per_switch"], f"{t['down_gbps']:,.6g}",
                      f"{t['up_gbps']:,.6g}",
                      f"{t['oversubscription']:.3g}:1" if t["oversubscription"] else "-")
                     for r, t in summary["tiers"].items()]))
    under = [r for r, t in summary["tiers"].items() if 0 < (t["oversubscription"] or 0) < 1]
    if under:
        con.print(f"oversub. below 1:1 ({', '.join(under)}): more capacity up than down; the "
                  "scaled-down fabric has fewer hosts under a switch than the paper's (--preset "
                  "segment: a full one)")
    peers = [r for r, t in summary["tiers"].items() if t.get("peer_gbps")]
    if peers:
        con.print(f"cables within a tier ({', '.join(peers)}): counted neither up nor down")
    e = summary["equal_cost_paths"]
    con.print(f"equal-cost paths {e['src']} -> {e['dst']}: {e['paths']}")
    if args.png:
        con.print(f"picture: {escape(args.png)}")
    if placement is not None:
        print_placement(con, summary["placement"])
    return 0


def print_placement(con, placed: dict) -> None:
    con.print(table("placement", ["server", "units", "switches", "hosts"],
                    [(name, " ".join(s["units"]), s["switches"], s["hosts"])
                     for name, s in placed["servers"].items()]))
    con.print(f"cut links: {placed['cut_links']} (switch-to-switch; host links cut: "
              f"{placed['host_links_cut']})")
