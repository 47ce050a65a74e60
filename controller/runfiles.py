"""The run's files the controller writes (their paths are in the spec the testbed writes, named
by HPN_TESTBED_SPEC): the status file the testbed polls and the wiring check's sightings."""
from __future__ import annotations

import json
import os
from collections.abc import Callable

from testbed.core import files
from testbed.model.contract import ControllerStatus

SPEC_ENV = "HPN_TESTBED_SPEC"


def read_spec() -> dict:
    with open(os.environ[SPEC_ENV]) as f:
        return json.load(f)


class StatusFile:
    """The status file (testbed/model/contract.py), rewritten whole and atomically, at most every
    `min_s` seconds (no path: the run asked for none)."""

    def __init__(self, path: str | None, min_s: float):
        self.path, self.min_s, self.written = path, min_s, float("-inf")

    def write(self, status: Callable[[], ControllerStatus], now: float, force: bool = False) -> bool:
        """Write `status()` unless it was written less than min_s ago (False: write it again
        soon) and not `force`."""
        if not self.path:
            return True
        if not force and now - self.written < self.min_s:
            return False
        self.written = now
        files.write_json(os.path.dirname(self.path), os.path.basename(self.path), status().to_json())
        return True


def postcard(path: str | None, switch: str, in_port: int, probe: str) -> None:
    """Where a wiring probe (testbed/measure/wiring.py) came in: one JSON line in `path`."""
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"probe": probe, "switch": switch, "in_port": in_port}) + "\n")
