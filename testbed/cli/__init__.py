"""hpn-testbed: the command line, one module per subcommand.

Bad input becomes one clear line and exit status 2, before anything is created; a run-time
failure exits 1; SIGTERM and Ctrl-C tear down whatever was built.
"""
from __future__ import annotations

import argparse
import signal
import sys

from testbed.cli import clean, doctor, lab, runs, servers, topo, trace, up
from testbed.core import interrupts
from testbed.core.errors import ParamError, TestbedError

SUBCOMMANDS = (doctor, topo, up, trace, runs, lab, servers, clean)


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments give one line ("hpn-testbed: ..."), not a usage block, and exit status 2.
    Subparsers are made of the same class (argparse's default), so every subcommand does too."""

    def error(self, message: str):
        where = self.prog.removeprefix("hpn-testbed").strip()     # e.g. "topo show"
        self.exit(2, f"hpn-testbed: {where + ': ' if where else ''}{' '.join(message.split())}\n")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="hpn-testbed", description=(
        "Emulate the networks that train large language models (Alibaba HPN, DeepSeek MPFT/MRFT, "
        "a three-tier Clos) on Mininet and Open vSwitch with an os-ken controller."))
    sub = p.add_subparsers(dest="command", required=True)
    for module in SUBCOMMANDS:
        module.add_parser(sub)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    interrupts.install()   # Ctrl-C, SIGTERM and SIGHUP unwind through the teardowns
    try:
        return args.func(args)
    except (ParamError, TestbedError) as e:
        _say(f"hpn-testbed: {e}")
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

    from testbed.emulation import runstate
    return [s.run_id for s in runstate.runs() if s.data["owner"][0] == os.getpid()]


if __name__ == "__main__":
    sys.exit(main())
