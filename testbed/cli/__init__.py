"""hpn-testbed: the command line, one module per subcommand.

Bad input becomes one clear line and exit status 2, before anything is created; a run-time
failure exits 1; SIGTERM and Ctrl-C tear down whatever was built.
"""
from __future__ import annotations

import argparse
import signal
import sys

from testbed.cli import clean, doctor, runs, topo, trace, up
from testbed.core.errors import ParamError, TestbedError

SUBCOMMANDS = (doctor, topo, up, trace, runs, clean)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hpn-testbed", description=(
        "Emulate the networks that train large language models (Alibaba HPN, DeepSeek MPFT/MRFT, "
        "a three-tier Clos) on Mininet and Open vSwitch with an os-ken controller."))
    sub = p.add_subparsers(dest="command", required=True)
    for module in SUBCOMMANDS:
        module.add_parser(sub)
    return p


def _terminate(signum, frame):
    raise KeyboardInterrupt   # unwinds through the context managers, which tear down


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return args.func(args)
    except (ParamError, TestbedError) as e:
        print(f"hpn-testbed: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("hpn-testbed: interrupted; cleaned up", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
