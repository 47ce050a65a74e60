"""Validity from the emulator's own waiting, on this machine (root, a fabric: under the lock).

A quick scenario run in this process (disjoint-paths --quick: two jobs, a few rounds) whose
run's cgroup is held to a small CPU quota while its measured traffic moves turns `invalid`,
naming the process that waited; the same run beside a neighbour busy loop at normal priority
(started and ended by its PID here) keeps a valid verdict, the emulator first in line
(testbed/emulation/cpu_precedence.py). Every quota changed is put back when the traffic stops
(checked), and the run's cgroup is gone after the run.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import scenarios
from testbed.core import cpuwindow, precedence
from testbed.measure import validity
from testbed.measure.waitlog import own_cgroups
from testbed.scenario.base import INVALID, REPRODUCED

pytestmark = pytest.mark.integration

MACHINE = precedence.choose(is_root=True)
SCENARIO = "disjoint-paths"
QUOTA = {"cgroup1": ("cpu.cfs_quota_us", "10000"), "cgroup2": ("cpu.max", "10000 100000")}


class Starve:
    """A cpuwindow observer: the run's cgroup held to 10% of a CPU while traffic moves, the
    old quota written back when it stops (each change recorded in `changed`)."""

    def __init__(self):
        self.changed: list[tuple[Path, str, str]] = []     # file, old, new
        self.knob, self.value = QUOTA[MACHINE.kind]

    def opened(self):
        for group in own_cgroups():
            knob = group / self.knob
            old = knob.read_text().strip()
            self.changed.append((knob, old, self.value))
            knob.write_text(self.value)

    def closed(self):
        for knob, old, _ in self.changed:
            if knob.exists() and knob.read_text().strip() != old:
                knob.write_text(old)


def run(tmp_path: Path) -> dict:
    scenario = scenarios.get(SCENARIO).configure({}, True)
    result = scenario.execute(tmp_path)
    return json.loads(Path(result.files["json"]).read_text())


def described(result: dict) -> str:
    return f"{result['verdict']}: {result['measured']} {json.dumps(result['figures'])[:1500]}"


@pytest.fixture(autouse=True)
def cgroup_precedence():
    if not MACHINE.cgroup:
        pytest.fail(f"this test needs a writable cgroup hierarchy (precedence: {MACHINE.describe()})")
    yield
    assert not list(MACHINE.hierarchy.glob(f"{precedence.PREFIX}*")), "a run's cgroup was left"


def test_a_run_starved_by_a_cgroup_quota_is_invalid_and_names_the_process(tmp_path):
    starve = Starve()
    with cpuwindow.observe(starve):
        result = run(tmp_path)
    assert starve.changed, "no run cgroup was starved"
    assert all(new == starve.value for _, _, new in starve.changed)
    for knob, old, _ in starve.changed:       # put back when the traffic stopped, or removed with the run
        assert not knob.exists() or knob.read_text().strip() == old
    name, fraction = result["figures"][validity.WAITING]["worst"]
    assert fraction > validity.WAIT_LIMIT, described(result)
    assert result["verdict"] == INVALID, described(result)
    assert f"{name} waited {fraction:.0%} of the window" in result["headline"], result["headline"]
    assert f"{name} waited" in result["measured"]


def test_a_run_beside_a_busy_neighbour_keeps_its_valid_verdict(tmp_path):
    neighbour = subprocess.Popen([sys.executable, "-c", "while True:\n    pass\n"])
    try:
        result = run(tmp_path)
    finally:
        neighbour.kill()
        neighbour.wait()
    name, fraction = result["figures"][validity.WAITING]["worst"]
    assert fraction <= validity.WAIT_LIMIT, described(result)
    assert result["verdict"] == REPRODUCED, described(result)
    assert validity.JUDGED_BUSY in result["figures"]       # the machine's busy fraction: reported
