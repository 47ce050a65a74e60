"""A user's own controller app on real OVS (`up --controller-app`, docs/extending.md): a learning
switch instead of ours forwards a loop-free tree (every host pings every other); one that dies
mid-run is caught by the watchdog (exit 1, nothing left); the example app beside ours leaves
every bring-up check passing and sees the fabric's events."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from testbed.model import make_fabric

from .conftest import TESTBED, Lines, finish, run_of, start_up, state_leftovers

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TREE = ["file", "--set", f"topology={EXAMPLES / 'tree.toml'}"]
CRASHING = '''"""A learning switch that dies (os._exit) once the run's directory holds `crash-now`."""
import os
import time

from os_ken.lib import hub

from l2_switch import LearningSwitch


class CrashingSwitch(LearningSwitch):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.trigger = os.path.join(os.path.dirname(os.environ["HPN_TESTBED_SPEC"]), "crash-now")
        self.threads.append(hub.spawn(self.wait_for_trigger))

    def wait_for_trigger(self):
        while not os.path.exists(self.trigger):
            time.sleep(0.05)
        os._exit(3)
'''


HANGING = '''"""A learning switch whose SwitchFeatures handler never returns (a busy loop); it notes when
it began (CLOCK_MONOTONIC, one clock for every process) in the file $HANG_STAMP."""
import os
import time

from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, set_ev_cls

from l2_switch import LearningSwitch


class HangingSwitch(LearningSwitch):
    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def switch_features_handler(self, ev):
        with open(os.environ["HANG_STAMP"], "w") as f:
            f.write(repr(time.monotonic()))
        while True:
            pass
'''

BLOCKING = '''"""A learning switch that, once the file $HANG_TRIGGER exists, sends its own loop an event
whose handler blocks for good (on a lock nobody releases), after noting when in $HANG_STAMP."""
import os
import threading
import time

from os_ken.controller import event
from os_ken.controller.handler import set_ev_cls
from os_ken.lib import hub

from l2_switch import LearningSwitch


class EventBlock(event.EventBase):
    pass


class BlockingSwitch(LearningSwitch):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.threads.append(hub.spawn(self.wait_for_trigger))

    def wait_for_trigger(self):
        while not os.path.exists(os.environ["HANG_TRIGGER"]):
            time.sleep(0.05)
        self.send_event(self.name, EventBlock())

    @set_ev_cls(EventBlock)
    def block(self, ev):
        with open(os.environ["HANG_STAMP"], "w") as f:
            f.write(repr(time.monotonic()))
        lock = threading.Lock()
        lock.acquire()
        lock.acquire()
'''


def checks_of(done) -> dict:
    assert done.returncode == 0, done.stdout + done.stderr
    return {c["name"]: c for c in json.loads(done.stdout)["result"]["checks"]}


def test_a_learning_switch_instead_of_ours_forwards_a_tree():
    env = dict(os.environ, PYTHONPATH=str(EXAMPLES))     # osken:MODULE: any importable module
    done = subprocess.run([*TESTBED, "up", *TREE, "--controller-app", "osken:l2_switch", "--check",
                           "--json"], capture_output=True, text=True, timeout=600, env=env)
    checks = checks_of(done)
    info = json.loads(done.stdout)["result"]
    assert info["controller_app"] == {"app": "osken:l2_switch", "class": "LearningSwitch",
                                      "mode": "instead of ours"}
    assert checks["reachability"]["passed"], checks["reachability"]
    assert checks["reachability"]["figures"]["pairs"] == 4 * 3       # every host to every other
    assert checks["wiring"]["figures"] == {"skipped": True}, checks["wiring"]
    assert checks["top-tier TCP"]["passed"], checks["top-tier TCP"]


def test_a_users_app_that_dies_mid_run_is_caught_by_the_watchdog(tmp_path):
    (tmp_path / "crashing.py").write_text(CRASHING)
    fab = make_fabric(TREE[0], {"topology": TREE[2].split("=", 1)[1]})
    env = dict(os.environ, PYTHONPATH=str(EXAMPLES), HPN_KEEP_DIR=str(tmp_path / "kept"))
    proc = start_up(*TREE, "--controller-app", str(tmp_path / "crashing.py"), env=env)
    state = run_of(proc.pid)
    (state.dir / "crash-now").write_text("")
    out = finish(proc, 120)
    assert proc.returncode == 1, out
    assert "the controller exited (status 3)" in out, out
    assert not state_leftovers(state, fab)
    assert not list(tmp_path.glob("__pycache__"))


def test_the_example_app_beside_ours_passes_the_checks(tmp_path):
    env = dict(os.environ, HPN_KEEP_DIR=str(tmp_path))
    done = subprocess.run([*TESTBED, "up", *TREE, "--controller-app", str(EXAMPLES / "controller_app.py"),
                           "--beside", "--check", "--json", "--keep"], capture_output=True, text=True,
                          timeout=600, env=env)
    checks = checks_of(done)
    assert list(checks) == ["wiring", "reachability", "top-tier TCP"]
    assert all(c["passed"] and not c["figures"].get("skipped") for c in checks.values()), checks
    [log] = tmp_path.glob("*/controller.log")
    text = log.read_text()
    assert len(re.findall(r"counter: switch \w+ connected", text)) == 3, text[-3000:]   # every switch
    assert "counter: 1 packet-ins from 1 switches" in text, text[-3000:]      # ARP, probes
    assert re.search(r"counter: switch \w+ port \d+ \(leaf0-eth1\) up", text), text[-3000:]


@pytest.mark.parametrize("how", ["busy loop at bring-up", "blocked handler mid-run"])
def test_a_users_app_that_hangs_is_named_hung_and_torn_down(how, tmp_path):
    """Liveness comes from the apps' event loops: a handler that never returns stops the heartbeat
    although the heartbeat's thread and os-ken's own apps go on. A busy loop in the SwitchFeatures
    handler (`up --check`: its checks never start) and a handler that blocks mid-run (`up`
    waiting for Ctrl-C) are each named as hung, exit 1, nothing left. How long after the handler
    stuck the testbed said so is printed (issue 39 asks within 2 s; not asserted: a timing)."""
    app, args = {"busy loop at bring-up": (HANGING, ["--check"]),
                 "blocked handler mid-run": (BLOCKING, [])}[how]
    (tmp_path / "hanging.py").write_text(app)
    stamp, trigger = tmp_path / "hung-at", tmp_path / "hang-now"
    env = dict(os.environ, PYTHONPATH=str(EXAMPLES), HPN_KEEP_DIR=str(tmp_path / "kept"),
               HANG_STAMP=str(stamp), HANG_TRIGGER=str(trigger))
    argv = [*TREE, "--controller-app", str(tmp_path / "hanging.py"), *args]
    proc = start_up(*argv, env=env) if not args else subprocess.Popen(
        [*TESTBED, "up", *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines = Lines(proc)
    state = run_of(proc.pid) if not args else None
    trigger.write_text("")
    try:
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = lines.text()
    assert proc.returncode == 1 and "the controller is hung" in out, out
    print(f"{how}: named hung {lines.when('the controller is hung') - float(stamp.read_text()):.2f} s "
          "after the handler stuck")
    from testbed.emulation.run import runstate
    assert not list(runstate.runs()), "the run's state is left"
    if state is not None:
        assert not state_leftovers(state, make_fabric(TREE[0], {"topology": TREE[2].split("=", 1)[1]}))
