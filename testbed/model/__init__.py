"""The pure model: fabrics, port budgets, pictures, routes, paths, routing policies and the
fluid (max-min fair) model of flows on links.

No root, no Open vSwitch, no processes: everything here is computed from parameters and
unit-tested. Imports only testbed.core.
"""
from testbed.model.families import FAMILIES, make_fabric

__all__ = ["FAMILIES", "make_fabric"]
