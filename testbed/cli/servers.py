"""`hpn-testbed servers up N | down | list`: local namespace "servers" to run one fabric across
several servers with one machine (testbed/emulation/cluster/servers.py)."""
from __future__ import annotations

from testbed.cli.output import console, escape, markup, print_json, table


def add_parser(sub) -> None:
    s = sub.add_parser("servers", help="local namespace servers (own sshd and Open vSwitch each) "
                                       "for `up --servers` (needs root)")
    ssub = s.add_subparsers(dest="servers_command", required=True)
    u = ssub.add_parser("up", help="start N servers joined by an underlay (198.18.77.0/24)")
    u.add_argument("n", type=int, metavar="N", help="how many servers (each a namespace with its own "
                                                     "sshd and Open vSwitch)")
    u.add_argument("--json", action="store_true")
    u.set_defaults(func=cmd_up)
    d = ssub.add_parser("down", help="remove the servers and everything `servers up` made")
    d.set_defaults(func=cmd_down)
    ls = ssub.add_parser("list", help="the servers, their addresses and whether they answer")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_list)


def cmd_up(args) -> int:
    from testbed.emulation.cluster import servers
    record = servers.up(args.n)
    names = [s["name"] for s in record["servers"]]
    if args.json:
        print_json({"servers": record["servers"], "ssh_config": servers.ssh_config()})
    else:
        console().print(escape(f"{len(names)} servers up: {', '.join(names)} (ssh -F "
                               f"{servers.ssh_config()} {names[0]}); try `hpn-testbed up hpn "
                               f"--servers {','.join(names[:2])} --check`"))
    return 0


def cmd_down(args) -> int:
    from testbed.emulation.cluster import servers
    done = servers.down()
    print("\n".join(done) if done else "no servers are up")
    return 0


def cmd_list(args) -> int:
    from testbed.emulation.cluster import servers
    rows = servers.status()
    if args.json:
        print_json({"servers": rows})
    elif not rows:
        print("no servers are up")
    else:
        def yes(ok: bool) -> str:
            return markup("[green]yes[/green]" if ok else "[red]no[/red]")
        console().print(table("servers", ["server", "underlay", "pid", "running", "ssh", "ovs"],
                              [(r["name"], r["ip"], r["pid"], yes(r["running"]), yes(r["ssh"]),
                                yes(r["ovs"])) for r in rows]))
    return 0
