"""`hpn-testbed doctor`: what this machine offers and which path each part takes."""
from __future__ import annotations

from testbed.cli.output import console, print_json, table


def add_parser(sub) -> None:
    d = sub.add_parser("doctor", help="what this machine offers and which path each part takes")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_doctor)


def cmd_doctor(args) -> int:
    import os

    from testbed.core import precedence
    from testbed.emulation.net import system
    feats = system.features()
    report = {
        "features": feats,
        "paths": {"ovs_datapath": system.datapath(), "host_bond": system.bond_backend(),
                  # what holds a dual-ported NIC's address: its bond, or a link of its own
                  "nic_interface": ("bond" if system.bond_backend() == "bonding" else
                                    f"{system.nic_link()} link" if system.nic_link() else "none"),
                  "one_way_fault": system.one_way_fault_backend(),
                  "impairments": "netem" if feats["netem"] else (   # `link impair` (docs/faults.md)
                      "loss (nftables) and rate (HTB); no delay or jitter (no sch_netem)"
                      if feats.get("nft_egress_hook") else "rate (HTB) only (no sch_netem, no nft egress)"),
                  # how a run's processes go first for the CPU (testbed/core/precedence.py)
                  "cpu_precedence": precedence.choose(is_root=os.geteuid() == 0).describe()},
        "versions": system.versions(),
        "ovs_running": system.ovs_running(),
    }
    missing = [name for name, ok in (("Open vSwitch (ovs-vsctl)", report["versions"]["ovs"]),
                                     ("Mininet", report["versions"]["mininet"]),
                                     ("os-ken", report["versions"]["os_ken"]),
                                     ("iperf3", report["versions"]["iperf3"]),
                                     ("HTB (sch_htb)", feats["htb"]),
                                     ("multipath routes or bonding",
                                      feats["multipath_routes"] or feats["bonding"]),
                                     ("a dummy or ifb link, or bonding (each NIC's interface)",
                                      system.nic_link() or feats["bonding"])) if not ok]
    if not report["ovs_running"]:
        missing.append("a running Open vSwitch (run `make setup` or ovs-ctl start)")
    report["missing"] = missing
    if os.geteuid() != 0:       # Open vSwitch's socket and some of tc's answers are root's only
        report["note"] = "not root: what needs root to be seen may read as missing; run it with sudo"
    if args.json:
        print_json(report)
        return 1 if missing else 0
    con = console()
    con.print(table("kernel and tools", ["feature", "here"],
                    [(k, "yes" if v else "no") for k, v in feats.items()]))
    con.print(table("paths this machine takes", ["part", "path"], report["paths"].items()))
    con.print(table("versions", ["component", "version"],
                    [(k, v or "missing") for k, v in report["versions"].items()]))
    for m in missing:
        con.print(f"[red]missing:[/red] {m}")
    if "note" in report:
        con.print(f"[yellow]note:[/yellow] {report['note']}")
    if not missing:
        con.print(f"[green]ready:[/green] fabrics can be built here (datapath "
                  f"{report['paths']['ovs_datapath']}, host bond {report['paths']['host_bond']}, "
                  f"NICs on {report['paths']['nic_interface']}s)")
    return 1 if missing else 0
