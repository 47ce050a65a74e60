"""`hpn-testbed servers`: being built (a placeholder that holds its place in the command line)."""
from __future__ import annotations


def add_parser(sub) -> None:
    sub.add_parser("servers", help="(being built)").set_defaults(func=lambda args: 2)
