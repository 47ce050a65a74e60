"""`hpn-testbed clean`: remove what earlier runs left behind, and only that."""
from __future__ import annotations


def add_parser(sub) -> None:
    c = sub.add_parser("clean", help="remove what earlier testbed runs left behind (only that)")
    c.add_argument("--all", action="store_true",
                   help="also end live runs: tear down fabrics that are running now (see `ps`), "
                        "not only what dead runs left")
    c.set_defaults(func=cmd_clean)


def cmd_clean(args) -> int:
    """Removes each dead run's objects; a run whose state cannot be read is named and left,
    the others are still cleaned. Never touches the run holding the machine's lock."""
    import os

    from testbed.core.errors import ParamError
    from testbed.emulation.run import teardown
    if os.geteuid() != 0:
        raise ParamError("clean needs root (it removes bridges, interfaces and processes of runs)")
    done = teardown.clean(include_live=args.all)
    for line in done:
        print(line)
    if not done:
        print("nothing to clean")
    return 0
