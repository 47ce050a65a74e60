"""The pure model: fabrics, port budgets, pictures, routes, paths and routing policies.

No root, no Open vSwitch, no processes: everything here is computed from parameters and
unit-tested. Imports only testbed.core.
"""
from testbed.model.families import FAMILIES, make_fabric

__all__ = ["FAMILIES", "make_fabric"]
