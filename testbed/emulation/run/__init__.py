"""A run's bookkeeping: what it created, written down before it is created (runstate.py), its
processes (processes.py), the listing of runs (runlist.py), the teardown and keeping its
directory (teardown.py, keep.py)."""
