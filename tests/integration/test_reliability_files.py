"""Reliability, second pass (issue 24): reports stay inside --out and never follow a symlink, the
one-fabric lock and `clean` do not move with HPN_RUN_DIR, device and FIFO inputs are refused at
once and small, and a controller stopped with SIGSTOP is noticed within a second (by its
heartbeat, testbed/emulation/control/controller.py): `up` tears down, a scenario reports invalid."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.core.wait import wait_for
from testbed.emulation.control.controller import MARKER as CONTROLLER_MARKER
from testbed.emulation.net import netdevs
from testbed.emulation.run import runstate
from testbed.model import make_fabric

from .conftest import TESTBED, finish, run_of, start_up, state_leftovers

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = (ROOT / "experiments" / "nic0-link-down.toml").read_text()
SHORT = EXAMPLE.replace("seconds = 10", "seconds = 6").replace("at = 4.0", "at = 2.5").replace(
    "for = 3.0", "for = 2.0")


def run_of_live(proc: subprocess.Popen):
    """The run `proc` owns once written; AssertionError at once if `proc` ended first (refused)."""
    if proc.poll() is not None:
        raise AssertionError(f"exited {proc.returncode} before its run started: {proc.stderr.read()}")
    return run_of(proc.pid)


def controller_pid(state) -> int:
    return next(pid for pid, marker in state.live_processes() if marker == CONTROLLER_MARKER)


# The CLI is started by a small Python launcher that forks it and reports its peak memory: a
# process forked from pytest itself would count pytest's own pages (Linux keeps the high-water
# mark of the memory a process had before exec in its ru_maxrss), several hundred MB late in a run.
PEAK = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def refused(argv, cwd=None, env=None) -> tuple[subprocess.CompletedProcess, float, int]:
    """Run the CLI; (result, seconds, peak memory in MB of the CLI's process)."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        peak = os.path.join(tmp, "peak")
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-c", PEAK, peak, *TESTBED[1:], *argv],
                              capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              cwd=cwd or ROOT, env=env, timeout=60)
        seconds = time.monotonic() - t0
        with open(peak) as f:
            peak_kb = int(f.read())
    return proc, seconds, peak_kb // 1024


# ---- reports: inside --out, never through a symlink ----

def test_a_name_that_climbs_out_is_refused_and_nothing_is_written(tmp_path):
    exp = tmp_path / "e.toml"
    exp.write_text(EXAMPLE.replace('name = "nic0-link-down"', 'name = "../escaped"'))
    res, _, _ = refused(["run", str(exp), "--out", str(tmp_path / "out")])
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "path separator" in res.stderr, res
    assert res.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.toml"]     # no out/, no escaped.*


def test_a_symlink_planted_at_a_report_is_refused_before_the_run(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "link-flap.json").symlink_to(victim)
    res, _, _ = refused(["run", "link-flap", "--quick", "--out", str(tmp_path / "out")])
    assert res.returncode == 2 and "symbolic link" in res.stderr and res.stdout == "", res
    assert victim.read_text() == "keep me"


def test_a_symlink_planted_during_the_run_is_replaced_not_followed(tmp_path):
    """Planted after the preflight passed: the report's rename replaces the link itself."""
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    victim.chmod(0o644)
    exp = tmp_path / "short.toml"
    exp.write_text(SHORT)
    out = tmp_path / "out"
    proc = subprocess.Popen([*TESTBED, "run", str(exp), "--json", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        wait_for("the run's state", lambda: run_of_live(proc), 60)
        wait_for("--out", out.is_dir, 60)
        for name in ("nic0-link-down.json", "nic0-link-down.png"):
            (out / name).symlink_to(victim)
        _, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode in (0, 1), stderr
    assert victim.read_text() == "keep me"
    report = out / "nic0-link-down.json"
    assert not report.is_symlink() and json.loads(report.read_text())["scenario"] == "nic0-link-down"
    assert not (out / "nic0-link-down.png").is_symlink()
    assert not [p for p in out.iterdir() if p.name.startswith(".")]        # no temporary left


def test_the_out_directory_is_never_a_link_before_or_during_the_run(tmp_path):
    """Issue 39: `ln -s TARGET shared/out` by another user in a world-writable `shared/` is
    refused before the run; the out directory swapped for a link while the run measures (root
    could, no one else can once the path passed the checks) is not written through: the run
    says so in one line, and the link's target stays as it was."""
    victim = tmp_path / "victimdir"
    victim.mkdir()
    (victim / "keep").write_text("keep me")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (shared / "out").symlink_to(victim)
    exp = tmp_path / "short.toml"
    exp.write_text(SHORT)
    res, _, _ = refused(["run", str(exp), "--out", str(shared / "out")])
    assert res.returncode == 2 and res.stdout == "" and res.stderr.count("\n") == 1, res
    assert "is open to other users" in res.stderr
    out = tmp_path / "out"
    proc = subprocess.Popen([*TESTBED, "run", str(exp), "--json", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        wait_for("the run's state", lambda: run_of_live(proc), 60)
        wait_for("--out", out.is_dir, 60)
        out.rename(tmp_path / "moved")
        out.symlink_to(victim)
        _, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1 and "a symbolic link" in stderr and "Traceback" not in stderr, stderr
    assert sorted(os.listdir(victim)) == ["keep"] and (victim / "keep").read_text() == "keep me"
    assert run_of(proc.pid) is None                      # torn down all the same


# ---- the lock and `clean` across run roots ----

def test_a_second_run_root_neither_starts_a_fabric_nor_cleans_the_live_one(tmp_path):
    fab = make_fabric("clos3", {})
    other = dict(os.environ, HPN_RUN_DIR=str(tmp_path / "other-root"))
    first = start_up("clos3")
    try:
        state = run_of(first.pid)
        second, _, _ = refused(["up", "clos3", "--check"], env=other)
        assert second.returncode == 2 and "another fabric is up" in second.stderr, second
        assert state.run_id in second.stderr
        cleaned, _, _ = refused(["clean"], env=other)
        assert cleaned.returncode == 0, cleaned
        assert state.run_id not in cleaned.stdout, cleaned.stdout
        names = set(os.listdir("/sys/class/net"))
        assert all(i in names for i in state.data["root_intfs"])
        assert set(fab.switches) <= netdevs.all_bridges()         # every bridge still there
        assert netdevs.tagged_bridges(state.run_id) == set(fab.switches)
    finally:
        first.send_signal(signal.SIGINT)
        out = finish(first)
    assert first.returncode == 130, out
    assert not state_leftovers(state, fab)


# ---- bounded reads: /dev/zero and a FIFO as every input file ----

def _answers(tmp_path) -> list[str]:
    (tmp_path / "answers.toml").write_text("lab = 1\ntor_host_ports = 128\n")
    return ["lab", "check", "1", str(tmp_path / "answers.toml"), "--results", str(tmp_path / "res")]


INPUTS = {
    "experiment file": lambda tmp, p: ["run", str(p("e.toml")), "--out", str(tmp / "out")],
    "lab answers": lambda tmp, p: ["lab", "check", "1", str(p("a.toml"))],
    "results file": lambda tmp, p: (tmp.joinpath("res").mkdir(), p("res/r.json"), _answers(tmp))[2],
}


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo"])
@pytest.mark.parametrize("surface", list(INPUTS))
def test_a_device_or_fifo_input_is_refused_at_once_and_small(surface, kind, tmp_path):
    def plant(name):
        path = tmp_path / name
        if kind == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")
        return path
    argv = INPUTS[surface](tmp_path, plant)
    res, seconds, peak_mb = refused(argv, cwd=tmp_path)
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res
    assert "not a regular file" in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert seconds < 1.0 and peak_mb < 200, (seconds, peak_mb)
    print(f"{surface} as {kind}: refused in {seconds:.2f} s, {peak_mb} MB")
    assert not (tmp_path / "out").exists()


# ---- a frozen controller ----

def test_a_stopped_controller_during_up_is_noticed_within_a_second():
    fab = make_fabric("hpn", {})
    proc = start_up("hpn")
    state = run_of(proc.pid)
    pid = controller_pid(state)
    stopped = time.monotonic()
    os.kill(pid, signal.SIGSTOP)
    try:
        out = finish(proc, timeout=60)
    finally:
        try:
            os.kill(pid, signal.SIGCONT)     # if the teardown did not end it, let the kill land
        except ProcessLookupError:
            pass
    ended = time.monotonic() - stopped
    assert proc.returncode == 1, out
    m = re.search(r"the controller is stopped \(no heartbeat for ([\d.]+) s\)", out)
    assert m, out
    assert float(m.group(1)) <= 1.0, out          # the heartbeat's age when the watchdog saw it
    print(f"noticed after {m.group(1)} s without a heartbeat; up ended {ended:.1f} s after SIGSTOP")
    assert not state_leftovers(state, fab)


def test_a_scenario_whose_controller_is_stopped_reports_invalid(tmp_path):
    fab = make_fabric("hpn", {})
    proc = subprocess.Popen([*TESTBED, "run", "link-flap", "--quick", "--json", "--out", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid = None
    try:
        state = wait_for("the scenario's run", lambda: run_of_live(proc), 60)
        wait_for("its traffic", lambda: any(m == "iperf3" for _, m in
                                            runstate.RunState.load(state.dir).live_processes()), 60)
        pid = controller_pid(runstate.RunState.load(state.dir))
        os.kill(pid, signal.SIGSTOP)
        out, _ = proc.communicate(timeout=120)
    finally:
        if pid is not None:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    [result] = json.loads(out)["result"]
    assert result["verdict"] == "invalid" and "controller is stopped" in result["measured"], result
    assert proc.returncode == 1
    assert not state_leftovers(runstate.RunState.load(state.dir) if state.dir.exists() else state, fab)
