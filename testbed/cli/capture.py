"""`hpn-testbed capture PORT`: tcpdump on a port of a running fabric (testbed/emulation/capture.py),
found like `trace` finds it: `--fabric RUN`, by default the one fabric running."""
from __future__ import annotations

import argparse
import os
import sys

from testbed.cli.output import check_output
from testbed.core import files
from testbed.core.errors import ParamError


def add_parser(sub) -> None:
    c = sub.add_parser("capture", help="capture packets on a port of a running fabric (tcpdump; "
                                       "needs root)")
    c.add_argument("port", metavar="PORT",
                   help="a host port (p0s0h0-n0p0), a switch port (p0s0r0t0-eth1) or a cable by "
                        "its two ends (A,B)")
    c.add_argument("-w", dest="write", metavar="FILE.pcap",
                   help="write the packets to FILE.pcap (Wireshark, scapy) instead of printing them; "
                        "a new file unless --force")
    c.add_argument("--force", action="store_true", help="with -w: replace FILE.pcap if it exists")
    c.add_argument("-c", dest="count", type=count_arg, metavar="N", help="stop after N packets")
    c.add_argument("--filter", metavar="BPF",
                   help="a tcpdump filter expression, e.g. 'icmp or arp' (never an option)")
    c.add_argument("--fabric", metavar="RUN",
                   help="the running fabric (`hpn-testbed ps`; default: the one running)")
    c.set_defaults(func=cmd_capture)


def count_arg(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= n <= 10**9:
        raise argparse.ArgumentTypeError(f"{n} is outside 1-1000000000")
    return n


def cmd_capture(args) -> int:
    from testbed.emulation import capture
    from testbed.emulation.run import runlist
    from testbed.model import families
    if os.geteuid() != 0:
        raise ParamError("capture needs root (tcpdump in the fabric's namespaces): run it with sudo")
    if args.force and args.write is None:
        raise ParamError("--force: replaces the file of -w FILE.pcap; give -w")
    if args.write is not None:
        check_output("-w", args.write, force=None if args.force else "--force")
    state = runlist.running(args.fabric)
    from testbed.emulation.cluster import parts as cluster_parts
    if cluster_parts.spread(state):
        raise ParamError(f"capture: run {state.run_id} is spread over servers; capture on one "
                         "machine's fabric only")
    spec = files.load_json(state.file("spec.json"), "run spec", files.STATE_MAX)
    if not (isinstance(spec, dict) and isinstance(spec.get("family"), str)
            and isinstance(spec.get("params"), dict)):
        raise ParamError(f"run {state.run_id}: its spec.json is not a fabric's spec")
    where = capture.locate(families.from_spec(spec), args.port)
    pid = state.data.get("hosts", {}).get(where.host) if where.host else None
    argv = capture.tcpdump_argv(where, pid, "-" if args.write else None, args.count, args.filter)
    print(f"capturing on {where} of run {state.run_id}"
          f"{' into ' + args.write if args.write else ''}; Ctrl-C stops", file=sys.stderr, flush=True)
    status = into_file(argv, args.write, args.force)
    return 0 if status == 0 else 1


def into_file(argv: list[str], write: str | None, force: bool) -> int:
    """Run tcpdump (`argv`, with `-w -` when `write`) and its exit status: the pcap goes to
    `write`, a file opened here by testbed/core/files.py (a new one unless `force`, never
    through a link), not by tcpdump, which as root would write wherever the name leads. A
    capture that failed before its first byte (a filter tcpdump refused) leaves no file."""
    from testbed.emulation import capture
    if not write:
        return capture.run(argv)
    fd = files.create_file(write, replace=force)
    try:
        status = capture.run(argv, stdout=fd)
        st = os.fstat(fd)
        if status != 0 and not force and st.st_size == 0 and _same_file(write, st):
            os.unlink(write)
        return status
    finally:
        os.close(fd)


def _same_file(path: str, st: os.stat_result) -> bool:
    try:
        now = os.lstat(path)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)
