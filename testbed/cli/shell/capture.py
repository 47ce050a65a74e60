"""`capture` in the CLI (testbed/cli/shell/cli.py): tcpdump on a port of this fabric, as `hpn-testbed
capture` does from outside (testbed/emulation/capture.py); Ctrl-C ends it and returns to the
prompt with the file complete."""
from __future__ import annotations

from mininet.log import output

from testbed.cli.shell.args import ShellParser, positive

CAPTURE = ShellParser("capture")
CAPTURE.add_argument("port", metavar="PORT")
CAPTURE.add_argument("-w", dest="write", metavar="FILE.pcap")
CAPTURE.add_argument("-c", dest="count", type=positive(int), metavar="N")
CAPTURE.add_argument("--filter", metavar="BPF")
CAPTURE.add_argument("--force", action="store_true")


class CaptureCommand:
    def do_capture(self, line):
        """Capture packets on a port (tcpdump; Ctrl-C stops).
           Usage: capture PORT [-w FILE.pcap [--force]] [-c N] [--filter BPF]
           PORT: a host port (p0s0h0-n0p0), a switch port (p0s0r0t0-eth1) or a cable A,B.
           With -w the packets go to a pcap file (Wireshark, scapy), a new one unless --force,
           otherwise to the screen."""
        from testbed.cli.capture import into_file
        from testbed.cli.output import check_output
        from testbed.emulation import capture
        args = CAPTURE.parse(line)
        if args.write is not None:
            check_output("-w", args.write, force=None if args.force else "--force")
        where = capture.locate(self.fabric, args.port)
        pid = self.mn[where.host].pid if where.host else None
        argv = capture.tcpdump_argv(where, pid, "-" if args.write else None, args.count, args.filter)
        output(f"*** capturing on {where}{' into ' + args.write if args.write else ''}; "
               "Ctrl-C stops\n")
        into_file(argv, args.write, args.force)
        output("*** capture ended" + (f": {args.write}\n" if args.write else "\n"))
