"""`hpn-testbed clean`: remove what earlier runs left behind, and only that."""
from __future__ import annotations


def add_parser(sub) -> None:
    c = sub.add_parser("clean", help="remove what earlier testbed runs left behind (only that)")
    c.add_argument("--all", action="store_true", help="also runs whose process is still alive")
    c.set_defaults(func=cmd_clean)


def cmd_clean(args) -> int:
    from testbed.emulation import runstate
    done = runstate.clean(include_live=args.all)
    for line in done:
        print(line)
    if not done:
        print("nothing to clean")
    return 0
