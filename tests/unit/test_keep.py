"""A run's directory is kept past teardown with --keep (HPN_KEEP=1) and always on failure
(testbed/emulation/run/keep.py); Ctrl-C is not a failure."""
import os

import pytest

from testbed.core import interrupts
from testbed.core.errors import PartLost
from testbed.emulation.run import keep


def test_failures_are_failures_and_ctrl_c_is_not():
    assert keep.failed(PartLost) and keep.failed(RuntimeError)
    assert not keep.failed(None) and not keep.failed(KeyboardInterrupt)
    assert not keep.failed(interrupts.Terminated)


def a_run(tmp_path):
    run = tmp_path / "hpn1-1"
    run.mkdir()
    (run / "controller.log").write_text("learned 16 NICs\n")
    return run


def test_keep_copies_the_run_directory_and_says_where(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HPN_KEEP_DIR", str(tmp_path / "kept"))
    target = keep.keep(a_run(tmp_path))
    assert (target / "controller.log").read_text() == "learned 16 NICs\n"
    assert str(target) in capsys.readouterr().err
    assert (tmp_path / "kept").stat().st_mode & 0o777 == 0o700
    assert not (target / "failure.txt").exists()


def test_a_failed_run_keeps_what_failed_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HPN_KEEP_DIR", str(tmp_path / "kept"))
    target = keep.keep(a_run(tmp_path), "TestbedError: on p0s0h0: script failed (1)")
    assert (target / "failure.txt").read_text() == "TestbedError: on p0s0h0: script failed (1)\n"


def test_a_sticky_shared_parent_like_var_tmp_is_fine(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setenv("HPN_KEEP_DIR", str(shared / "hpn-testbed"))
    assert keep.keep(a_run(tmp_path)) == shared / "hpn-testbed" / "hpn1-1"


def planted_symlink(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (tmp_path / "kept").symlink_to(victim)
    return victim


def another_users(tmp_path, monkeypatch):
    (tmp_path / "kept").mkdir()
    real = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: real + 1)    # the directory is now someone else's


def open_parent(tmp_path):
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o777)                         # no sticky bit: anyone may rename in it
    return tmp_path / "open" / "kept"


@pytest.mark.parametrize("plant,why", [
    (lambda tmp, mp: planted_symlink(tmp) and None, "not a directory"),
    (lambda tmp, mp: another_users(tmp, mp), "another user's"),
    (lambda tmp, mp: open_parent(tmp), "open to other users"),
])
def test_a_name_another_user_made_first_is_not_written_into(plant, why, tmp_path, monkeypatch, capsys):
    target = plant(tmp_path, monkeypatch) or tmp_path / "kept"
    monkeypatch.setenv("HPN_KEEP_DIR", str(target))
    run = a_run(tmp_path)
    assert keep.keep(run) is None
    assert why in capsys.readouterr().err
    assert run.exists() and not (tmp_path / "victim" / "hpn1-1").exists()
    assert not (tmp_path / "open" / "kept").exists()


def test_wanted_follows_the_environment(monkeypatch):
    monkeypatch.delenv("HPN_KEEP", raising=False)
    assert not keep.wanted()
    monkeypatch.setenv("HPN_KEEP", "1")
    assert keep.wanted()


def test_a_copy_that_fails_is_said_and_raises_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HPN_KEEP_DIR", str(tmp_path / "kept"))

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(keep.shutil, "copytree", full)
    assert keep.keep(a_run(tmp_path), "PartLost: the controller exited") is None
    assert "not kept whole" in capsys.readouterr().err
