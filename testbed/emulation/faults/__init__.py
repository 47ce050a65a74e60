"""Faults: what a fault kind is (kinds.py), the built-in kinds (library.py), the one list of them
(registry.py), and injecting them on a running fabric, each undone on exit (inject.py)."""
