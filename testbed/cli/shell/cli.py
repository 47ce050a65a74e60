"""`up --cli`: Mininet's CLI on a running fabric, with the testbed's commands beside Mininet's.

Mininet's own commands print again (the builder silences Mininet's logger, through which the CLI
writes), its pingall, iperf and link work on hosts that have one address per NIC and none per host
(testbed/cli/shell/mininet.py), and trace, fault, rates, queues, routes and check come from the
testbed (testbed/cli/shell/fabric.py), capture from testbed/cli/shell/capture.py. Whatever a user
types is answered, a mistake in one line: no traceback ends the session. Ctrl-C stops the running
command and returns to the prompt (Mininet's habit). `exit`, Ctrl-D, SIGTERM and SIGHUP
(testbed.core.interrupts raises Terminated, which the CLI does not catch) leave it; the faults typed
in it are undone, then the `with Emulation` block of `up` tears the fabric down.
"""
from __future__ import annotations

import inspect
import shlex
import sys
from cmd import Cmd

from mininet.cli import CLI
from mininet.log import LEVELS, error, lg, output
from mininet.util import dumpNodeConnections

from testbed.cli.shell.args import Usage, one_line
from testbed.cli.shell.capture import CaptureCommand
from testbed.cli.shell.fabric import FabricCommands, cable_peers
from testbed.cli.shell.mininet import MininetCommands
from testbed.core.errors import PartLost

TESTBED_COMMANDS = ("trace", "fault", "rates", "queues", "routes", "check", "capture")
MININET_COMMANDS = ("nodes", "net", "links", "dump", "intfs", "ports", "pingall", "pingallfull",
                    "pingpair", "pingpairfull", "iperf", "iperfudp", "link", "switch", "dpctl",
                    "py", "px", "sh", "source", "time", "noecho", "xterm", "gterm", "x", "exit")
# one-line summaries where Mininet's docstrings do not give one
SUMMARIES = {"ports": "List the ports and interfaces of each switch.",
             "links": "List the links with the state of both interfaces.",
             "sh": "Run a shell command on the machine itself: sh CMD",
             "x": "Open an X11 tunnel to a node, optionally running a client: x NODE [CMD]",
             "xterm": "Open an xterm on each node named (needs a display): xterm NODE ...",
             "gterm": "Open a gnome-terminal on each node named (needs a display).",
             "exit": "Leave the CLI and tear the fabric down (also quit, Ctrl-D).",
             "time": "Time a command: time CMD"}
NODE_HELP = ("\nAnd <node> <cmd> runs cmd on a node, e.g. `p0s0h0 ip -br addr`; host names after\n"
             "<node> become the address of the host's first NIC (`p0s0h0 ping -c1 p1s0h1`).\n"
             "`help COMMAND` describes one command.\n")


class FabricCLI(FabricCommands, CaptureCommand, MininetCommands, CLI):
    """Mininet's CLI for an Emulation (testbed.emulation.build); runs until exit, like Mininet's."""

    prompt = "mininet> "

    def __init__(self, emu, faults, stdin=sys.stdin, script=None):
        self.emu, self.fabric, self.faults = emu, emu.fabric, faults
        self.peers = cable_peers(emu.fabric)
        output("*** Starting CLI: `help` lists the commands; `exit` or Ctrl-D tears the fabric down\n")
        super().__init__(emu.net, stdin=stdin, script=script)

    # ---- nothing typed ends the session with a traceback ----
    def run(self):
        while True:
            try:
                return super().run()      # Mininet's loop; it survives Ctrl-C at the prompt
            except PartLost:              # the fabric broke (the watchdog): end, `up` says why
                raise
            except Exception as e:  # noqa: BLE001 -- e.g. input the terminal cannot decode
                error(f"*** {one_line(e)}\n")
                if self.stdin.closed:      # nothing more can be typed: leave, as Ctrl-D does
                    return None

    def onecmd(self, line):
        name = self.parseline(line)[0] or "command"
        try:
            return super().onecmd(line)
        except KeyboardInterrupt:          # Ctrl-C stops the command, not the session
            output("\nInterrupt\n")
        except PartLost:
            raise
        except Usage as e:
            error(f"*** {name}: {e}\n")
        except SystemExit:                 # `py exit()`: leaving takes `exit`, which tears down
            error(f"*** {name}: SystemExit ignored; type exit to leave\n")
        except Exception as e:  # noqa: BLE001 -- any failure of a command is its one-line answer
            error(f"*** {name}: {one_line(e) or type(e).__name__}\n")
        return None

    def default(self, line):
        """<node> <cmd>: run cmd on the node; host names in it become their first NIC's address."""
        first, args, line = self.parseline(line)
        if first not in self.mn:
            return error(f"*** Unknown command: {one_line(line)} (help lists the commands)\n")
        if not args:
            raise Usage(f"please enter a command for node: {first} <cmd>")
        words = [self.fabric.hosts[w].nics[0].ip if w in self.fabric.hosts else w
                 for w in args.split(" ")]
        node = self.mn[first]
        node.sendCmd(" ".join(words))
        self.waitForNode(node)

    def completedefault(self, text, *ignored):
        """Tab completes node, NIC and interface names."""
        names = list(self.mn) + [n.name for n in self.fabric.nics()] + \
            [i for l in self.fabric.links for i in (l.a_intf, l.b_intf)]
        return sorted(n for n in set(names) if n.startswith(text))

    def completenames(self, text, *ignored):
        return super().completenames(text, *ignored) + [n for n in self.mn if n.startswith(text)]

    # ---- Mininet's listings, each node once (the controller reference shares core c0's name) ----
    def nodes(self) -> list:
        return self.mn.hosts + self.mn.switches

    def do_nodes(self, _line):
        """List all nodes."""
        output(f"available nodes are: \n{' '.join(sorted(n.name for n in self.nodes()))}\n")

    def do_net(self, _line):
        """List network connections."""
        dumpNodeConnections(self.nodes())

    def do_dump(self, _line):
        """Dump node info."""
        for node in self.nodes():
            output(f"{node!r}\n")

    def do_intfs(self, _line):
        """List interfaces."""
        for node in self.nodes():
            output(f"{node.name}: {','.join(node.intfNames())}\n")

    def do_source(self, line):
        """Read commands from an input file.
           Usage: source FILE"""
        words = shlex.split(line)
        if len(words) != 1:
            raise Usage("usage: source FILE")
        with open(words[0]):    # refused in one line before Mininet's reader tries it
            pass
        super().do_source(line)

    def getLocals(self):
        names = super().getLocals()
        names.update(exit=refuse_exit, quit=refuse_exit)   # Python's own close standard input
        return names

    def do_py(self, line):
        """Evaluate a Python expression, e.g. py net['p0s0h0'].cmd('ls'); prints even None."""
        try:
            result = eval(line, globals(), self.getLocals())   # Mininet's py, on purpose
        except Exception as e:  # noqa: BLE001 -- Mininet's habit: the error is the answer
            return output(f"{e}\n")
        output(f"{result if isinstance(result, str) else repr(result)}\n")

    # ---- help ----
    def do_help(self, line):
        """List the commands, one line each; `help COMMAND` describes one.
           Usage: help [COMMAND] (help fault KIND: a fault kind's arguments)"""
        name, _, rest = line.strip().partition(" ")
        if hasattr(self, f"help_{name}"):     # a help made from a registry (`help fault [KIND]`)
            return output(getattr(self, f"help_{name}")(rest.strip()))
        if name:
            doc = getattr(getattr(self, f"do_{name}", None), "__doc__", None)
            return output(inspect.cleandoc(doc) + "\n") if doc else Cmd.do_help(self, line.strip())
        for title, names in (("Testbed commands", TESTBED_COMMANDS), ("Mininet commands", MININET_COMMANDS)):
            output(f"{title}:\n")
            for name in names:
                output(f"  {name:<13} {self.summary(name)}\n")
        output(NODE_HELP)

    def summary(self, name: str) -> str:
        if name in SUMMARIES:
            return SUMMARIES[name]
        return (getattr(self, f"do_{name}").__doc__ or "").strip().split("\n")[0]


def refuse_exit(*_args):
    raise Usage("leaving takes `exit` at the prompt (it tears the fabric down)")


def run_shell(emu) -> None:
    """The CLI on `emu` until the user leaves it; the faults typed in it are undone on the way out."""
    from testbed.emulation.faults.inject import Faults
    quiet = lg.getEffectiveLevel()
    set_mininet_level(LEVELS["output"])      # the builder set `error`: the CLI would print nothing
    try:
        with Faults(emu) as faults:
            FabricCLI(emu, faults)
        output("*** Leaving the CLI: tearing the fabric down\n")
    finally:
        set_mininet_level(quiet)      # what was typed at the prompt ends with the run (teardown)


def set_mininet_level(level: int) -> None:
    lg.setLevel(level)
    for handler in lg.handlers:
        handler.setLevel(level)
