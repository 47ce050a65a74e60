"""Where root writes what a user named (testbed/core/files.py, issue 39): never through a
symbolic link at the output directory's name, nor one another user could plant or swap on the
way (a link in a world-writable directory), even when swapped in after the checks; and a run
refuses before it prints or creates anything (its --out directory included) when its fabric's
names are taken or its run directory (HPN_RUN_DIR) cannot be one."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from testbed.cli import main
from testbed.core import files
from testbed.core.errors import TestbedError as Refused
from testbed.emulation.net import netdevs, system
from testbed.emulation.run import runstate

from .conftest import trip_past_checks

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "experiments" / "nic0-link-down.toml"


@pytest.fixture
def victim(tmp_path) -> Path:
    (tmp_path / "victimdir").mkdir()
    (tmp_path / "victimdir" / "keep").write_text("keep me")
    return tmp_path / "victimdir"


def untouched(victim: Path) -> bool:
    return os.listdir(victim) == ["keep"] and (victim / "keep").read_text() == "keep me"


def test_a_directory_swapped_for_a_link_after_the_check_is_not_written_through(tmp_path, victim):
    out = tmp_path / "out"
    out.mkdir()
    assert files.output_problem(str(out), directory=True) is None
    out.rename(tmp_path / "moved")                   # the swap, between the check and the writes
    out.symlink_to(victim)
    with pytest.raises(Refused, match="symbolic link"):
        files.write_json(out, "link-flap.json", {"a": 1})
    with pytest.raises(Refused, match="symbolic link"):
        files.make_dirs(out)
    with pytest.raises(Refused, match="symbolic link"):
        files.create_file(out / "p.pcap")
    assert untouched(victim)


def test_make_dirs_makes_what_is_missing_and_follows_only_our_own_links(tmp_path, victim):
    made = files.make_dirs(tmp_path / "a" / "b" / "c")
    assert made.is_dir() and not made.is_symlink()
    (tmp_path / "ours").symlink_to(tmp_path / "a")    # a link root made: followed on the way
    assert files.output_problem(str(tmp_path / "ours" / "d"), directory=True) is None
    files.make_dirs(tmp_path / "ours" / "d")
    assert (tmp_path / "a" / "d").is_dir()
    (tmp_path / "theirs").symlink_to(victim)
    os.lchown(tmp_path / "theirs", 65534, 65534)
    assert "another user's symbolic link" in files.output_problem(str(tmp_path / "theirs" / "x"), True)
    with pytest.raises(Refused):
        files.make_dirs(tmp_path / "theirs" / "x")
    assert untouched(victim)


@pytest.mark.parametrize("mode,ok", [(0o777, False), (0o1777, True), (0o775, True), (0o755, True)],
                         ids=["777", "1777", "775", "755"])
def test_a_directory_other_users_can_change_is_not_looked_in(mode, ok, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    problem = files.output_problem(str(shared / "out"), directory=True)
    assert (problem is None) == ok, problem
    assert files.output_problem(str(shared), directory=True) is None       # its own name: fine
    assert files.output_problem(str(shared / "p.png")) is None            # a new file in it


def test_a_capture_file_is_new_unless_replacing_is_asked(tmp_path):
    fd = files.create_file(tmp_path / "p.pcap")
    os.write(fd, b"x")
    os.close(fd)
    with pytest.raises(Refused, match="exists"):
        files.create_file(tmp_path / "p.pcap")
    os.close(files.create_file(tmp_path / "p.pcap", replace=True))
    assert (tmp_path / "p.pcap").read_bytes() == b""
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(Refused):
        files.create_file(tmp_path / "fifo", replace=True)


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """A run gets past root, the lock and Open vSwitch; anything past the preflight trips."""
    trip_past_checks(monkeypatch)
    monkeypatch.setattr(runstate, "ROOT", tmp_path / "runs")
    monkeypatch.setattr(runstate, "LOCK_FILE", tmp_path / "lock")
    monkeypatch.setattr(system, "check_machine", lambda datapath, bond: None)
    monkeypatch.setattr(system, "datapath", lambda: "netdev")
    monkeypatch.setattr(system, "bond_backend", lambda: "multipath")
    monkeypatch.setattr(netdevs, "all_bridges", lambda: set())
    monkeypatch.chdir(tmp_path)
    return tmp_path


def refused(argv, capsys) -> str:
    try:
        status = main(argv)
    except SystemExit as e:
        status = e.code
    out, err = capsys.readouterr()
    assert status == 2 and out == "" and len(err.splitlines()) == 1, (status, out, err)
    return err


@pytest.mark.parametrize("what", ["experiment", "scenario"])
def test_names_a_killed_run_left_are_refused_before_the_header_and_the_out_dir(what, machine, capsys,
                                                                              monkeypatch):
    from testbed.model import make_fabric
    left = set(make_fabric("hpn", {"nics": 3}).switches) | set(make_fabric("hpn", {}).switches)
    monkeypatch.setattr(netdevs, "all_bridges", lambda: left)
    name = str(EXAMPLE) if what == "experiment" else "link-flap"
    err = refused(["run", name, "--quick", "--out", str(machine / "newdir")], capsys)
    assert "names this fabric needs already exist" in err
    assert not (machine / "newdir").exists()


@pytest.mark.parametrize("where", ["/proc/x", "{tmp}/file", "{tmp}/file/runs", "/proc/self/x"])
def test_a_run_directory_that_cannot_be_one_is_refused_first(where, machine, capsys, monkeypatch):
    (machine / "file").write_text("a file")
    monkeypatch.setattr(runstate, "ROOT", Path(where.replace("{tmp}", str(machine))))
    err = refused(["run", str(EXAMPLE), "--out", str(machine / "newdir")], capsys)
    assert "HPN_RUN_DIR" in err and "Traceback" not in err
    assert not (machine / "newdir").exists() and not Path("/proc/x").exists()
