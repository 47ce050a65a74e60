"""A run's state.json is checked in one place, its reader (runstate.RunState.load): every field
`ps`, `trace`, `capture` and `clean` read, fed odd types one at a time (a fuzz over fields and
values), is either taken or refused there as one line, never a traceback further on. A state
that cannot be read is said (`ps` exit 1, `trace` names it), never "no fabric is running"; as
another user, where root's run directories are closed, the answer is that root is needed."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from testbed.cli import main
from testbed.core import interrupts
from testbed.core.errors import ParamError
from testbed.emulation.run import processes, runlist, runstate

ODD = [None, True, -1, 2**70, 1.5, float("nan"), "x", "[/x]", [], {}, [1], [[1]], {"a": 1}, {"a": None}]


def good() -> dict:
    parent = os.getppid()
    return {"owner": [parent, processes.start_time(parent)], "pids": [[parent, "sh", None]],
            "bridges": ["b1"], "root_intfs": ["i1"], "nft_tables": [], "dirs": [], "knobs": [],
            "created": 1.5e9, "hosts": {"p0s0h0": parent},
            "about": {"family": "hpn", "switches": 4, "hosts": 2, "nics": 4, "datapath": "user"},
            "servers": {"srv1": {"ip": "198.18.77.1", "ssh": ["ssh"], "hosts": {"p0s0h0": parent},
                                 "intfs": ["x"], "bridges": ["b1"]}}}


def paths(node, prefix=()):
    """Every field of the state, nested ones too, as a tuple of keys (list items by index)."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield (*prefix, key)
        yield from paths(value, (*prefix, key))


def with_value(path, value) -> dict:
    data = copy.deepcopy(good())
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


CASES = [(path, value) for path in paths(good()) for value in ODD]


@pytest.fixture
def world(monkeypatch, tmp_path):
    monkeypatch.setattr(runstate, "ROOT", tmp_path / "runs")
    monkeypatch.setattr(interrupts, "install", lambda: None)
    (tmp_path / "runs" / "fake").mkdir(parents=True)
    (tmp_path / "runs" / "fake" / "spec.json").write_text(json.dumps({"family": "hpn", "params": {}}))
    return tmp_path / "runs" / "fake"


def invoke(argv) -> int:
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


@pytest.mark.parametrize("path,value", CASES, ids=[f"{'.'.join(map(str, p))}={json.dumps(v)[:12]}"
                                                   for p, v in CASES])
def test_an_odd_field_is_taken_or_refused_by_the_reader(path, value, world, capsys, monkeypatch):
    (world / "state.json").write_text(json.dumps(with_value(path, value)))
    try:
        state = runstate.RunState.load(world)
    except ParamError as e:
        assert "\n" not in str(e)
        state = None
    rows = runlist.listing()              # what `ps` reads: every kept field, as it is
    assert [r["run"] for r in rows] == ["fake"] and bool(rows[0].get("error")) == (state is None)
    for argv in (["ps"], ["ps", "--json"]):
        status = invoke(argv)
        out, err = capsys.readouterr()
        assert status == (1 if state is None else 0) and "Traceback" not in err and err == "", err
    if state is not None:
        runstate.alive(state)
        state.live_processes()
    monkeypatch.setattr(subprocess, "run", None)       # trace must refuse before asking a host
    status = invoke(["trace", "--fabric", "fake", "nosuch", "p0s0h0"])
    err = capsys.readouterr().err
    assert status == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err


def test_there_are_many_odd_fields():
    assert len({p for p, _ in CASES}) >= 30 and len(CASES) >= 400


def test_an_unreadable_state_is_said_not_taken_for_no_fabric(world, capsys):
    (world / "state.json").write_bytes(b"\xff{")
    assert invoke(["ps"]) == 1
    out, err = capsys.readouterr()
    assert "fake" in out and "state unreadable" in out and "no fabric" not in out
    status = invoke(["capture", "p0s0h0-n0p0"]) if os.geteuid() == 0 else 2
    err = capsys.readouterr().err
    assert status == 2 and ("run fake:" in err if os.geteuid() == 0 else True), err
    assert invoke(["trace", "a", "b"]) == 2
    assert "run fake: run state" in capsys.readouterr().err


def test_another_user_is_told_root_is_needed(as_nobody):
    """As nobody, with a fabric's run directory root's 0700: not "no fabric is running"."""
    with tempfile.TemporaryDirectory(prefix="hpn-ps-") as tmp:
        os.chmod(tmp, 0o755)
        run = Path(tmp, "r1")
        run.mkdir(mode=0o700)
        (run / "state.json").write_text(json.dumps(good()))
        env = {**os.environ, "HPN_RUN_DIR": tmp, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "200"}
        for argv in (["ps"], ["capture", "p0s0h0-n0p0"], ["trace", "p0s0h0", "p0s0h1"]):
            proc = subprocess.run([*as_nobody, sys.executable, "-m", "testbed", *argv], capture_output=True,
                                  text=True, cwd=tmp, env=env, timeout=60, check=False)
            assert "no fabric is running" not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr
            if as_nobody and "dac_read_search" not in " ".join(as_nobody):
                assert proc.returncode == 2 and "root" in proc.stderr, (argv, proc.stderr)
                assert len(proc.stderr.splitlines()) == 1 and proc.stdout == ""
            elif argv == ["ps"]:            # it may read the state: it shows the run
                assert proc.returncode == 0 and "r1" in proc.stdout, proc.stderr
