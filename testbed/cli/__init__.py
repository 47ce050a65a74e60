"""hpn-testbed: the command line, one module per subcommand.

Bad input becomes one clear line and exit status 2, before anything is created; a run-time
failure exits 1; SIGTERM and Ctrl-C tear down whatever was built. Under `--json` errors come
as JSON too (testbed/cli/output.py). A reader that goes away (`| head`) ends the command
quietly, here, for every subcommand: its teardowns run, no traceback, exit status 141 (what a
tool killed by SIGPIPE gives).
"""
from __future__ import annotations

import argparse
import signal
import sys

from testbed.cli import (
    capture,
    clean,
    doctor,
    job,
    lab,
    link,
    output,
    ps,
    runs,
    servers,
    top,
    topo,
    trace,
    up,
)
from testbed.core import interrupts, progress
from testbed.core.errors import ParamError, TestbedError

SUBCOMMANDS = (doctor, topo, up, ps, top, trace, capture, link, runs, job, lab, servers, clean)
SIGPIPE_STATUS = 128 + signal.SIGPIPE
PROGRESS = ("Long work (a bring-up's phases, a scenario's, the tour's and --repeat's k of N with an "
            "ETA) shows its progress on stderr: a live status line on a terminal, one timestamped "
            "line per phase on a pipe, nothing under --json; stdout keeps the results.")
JSON_HELP = "print one JSON envelope on stdout instead of tables and text (progress off, errors as JSON)"
VERBOSE_HELP = ("more progress on stderr: -v adds each phase's duration as it ends, -vv also "
                "every command the testbed runs (ovs-vsctl, tc, the hosts' scripts)")


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments give one line ("hpn-testbed: ..."), not a usage block, and exit status 2.
    Subparsers are made of the same class (argparse's default), so every subcommand does too."""

    def error(self, message: str):
        where = self.prog.removeprefix("hpn-testbed").strip()     # e.g. "topo show"
        if message.startswith("the following arguments are required: ") and message.endswith("command"):
            message = f"choose a command: {', '.join(self._subcommands())} " \
                      f"(`{' '.join(('hpn-testbed', where, '--help')).replace('  ', ' ')}`)"
        if where:
            output.set_command(where)
        output.fail(f"hpn-testbed: {where + ': ' if where else ''}{' '.join(message.split())}", 2)
        self.exit(2)

    def _subcommands(self) -> list[str]:
        return [name for a in self._actions if isinstance(a, argparse._SubParsersAction)
                for name in a.choices]

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but an unknown argument is named by the subcommand it was given to
        ("hpn-testbed clean: unrecognized arguments: --bogus"), not by the top parser."""
        args, extra = self.parse_known_args(args, namespace)
        if extra:
            self._innermost(args).error(f"unrecognized arguments: {' '.join(extra)}")
        return args

    def _innermost(self, args) -> argparse.ArgumentParser:
        parser = self
        while True:
            subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            chosen = subs and getattr(args, subs[0].dest, None)
            if not chosen or chosen not in subs[0].choices:
                return parser
            parser = subs[0].choices[chosen]


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="hpn-testbed", description=(
        "Emulate the networks that train large language models (Alibaba HPN, DeepSeek MPFT/MRFT, "
        "a three-tier Clos) on Mininet and Open vSwitch with an os-ken controller."), epilog=PROGRESS)
    p.add_argument("--version", action="version", version=f"%(prog)s {output.version()}")
    p.add_argument("-v", "--verbose", action="count", default=0, help=VERBOSE_HELP)
    sub = p.add_subparsers(dest="command", required=True)
    for module in SUBCOMMANDS:
        module.add_parser(sub)
    for parser in every_parser(p):          # every --json says what it does
        for action in parser._actions:
            if "--json" in action.option_strings and not action.help:
                action.help = JSON_HELP
    for parser in sub.choices.values():   # `hpn-testbed up -v` as well as `hpn-testbed -v up`
        parser.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                            help=VERBOSE_HELP)
        parser.epilog = parser.epilog or PROGRESS
    return p


def every_parser(parser: argparse.ArgumentParser):
    """`parser` and every subcommand's parser below it."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from every_parser(sub)


def takes_custom(parser: argparse.ArgumentParser, argv: list[str]) -> bool:
    """Does the (sub)command `argv` names accept --custom? Its parser found by the command
    words, as argparse finds it."""
    for word in argv:
        if word == "--":
            break
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is not None and word in sub.choices:
            parser = sub.choices[word]
    return any("--custom" in a.option_strings for a in parser._actions)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    output.begin(argv)
    try:
        status = _run(argv)
        sys.stdout.flush()      # here, not at exit: a reader gone by now is handled below
        return status
    except BrokenPipeError:
        output.reader_gone()
        return SIGPIPE_STATUS


def _run(argv: list[str]) -> int:
    from testbed.core import plugins
    custom = plugins.paths_in(argv)
    if custom:  # a command without --custom is refused by its parser before any plug-in runs
        try:
            parser = build_parser()
        except ParamError as e:
            output.fail(f"hpn-testbed: {e}", e.exit_status)
            return e.exit_status
        if not takes_custom(parser, argv):
            parser.parse_args(argv)     # exits 2: "unrecognized arguments: --custom ..."
    try:    # before the parser: what a plug-in registers is among its choices
        plugins.load_all(custom)
    except ParamError as e:
        output.fail(f"hpn-testbed: --custom {e}", e.exit_status)
        return e.exit_status
    try:    # the choices read the registries: installed packages' entry points load there
        parser = build_parser()
    except ParamError as e:
        output.fail(f"hpn-testbed: {e}", e.exit_status)
        return e.exit_status
    args = parser.parse_args(argv)
    output.set_command(" ".join(a for a in (args.command, *[v for k, v in vars(args).items()
                                                           if k.endswith("_command")]) if a))
    interrupts.install()   # Ctrl-C, SIGTERM and SIGHUP unwind through the teardowns
    interrupts.last = None  # a signal of an earlier command (in one process) is not this one's
    try:
        with plugins.blamed(), \
                progress.shown(progress.choose(getattr(args, "json", False)), args.verbose), \
                output.envelope_only():
            return args.func(args)
    except (ParamError, TestbedError) as e:
        output.fail(f"hpn-testbed: {e}", e.exit_status)
        return e.exit_status
    except (KeyboardInterrupt, interrupts.Terminated):
        signum = interrupts.last or signal.SIGINT
        left = _own_leftovers()
        if left:
            _say(f"hpn-testbed: interrupted; teardown incomplete ({', '.join(left)}): run "
                 "`hpn-testbed clean`")
            return 1
        _say("hpn-testbed: interrupted; cleaned up")
        return 128 + signum


def _say(line: str) -> None:
    """One line on stderr, if there is still a terminal to take it (SIGHUP: it went away)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:
        pass


def _own_leftovers() -> list[str]:
    """Runs of this process whose state is still recorded (teardown did not finish)."""
    import os

    from testbed.emulation.run import runstate
    return [s.run_id for s in runstate.runs() if s.data["owner"][0] == os.getpid()]


if __name__ == "__main__":
    sys.exit(main())
