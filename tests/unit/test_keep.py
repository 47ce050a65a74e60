"""A run's directory is kept past teardown with --keep (HPN_KEEP=1) and always on failure
(testbed/emulation/keep.py); Ctrl-C is not a failure."""
from testbed.core import interrupts
from testbed.core.errors import PartLost
from testbed.emulation import keep


def test_failures_are_failures_and_ctrl_c_is_not():
    assert keep.failed(PartLost) and keep.failed(RuntimeError)
    assert not keep.failed(None) and not keep.failed(KeyboardInterrupt)
    assert not keep.failed(interrupts.Terminated)


def test_keep_copies_the_run_directory_and_says_where(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(keep, "KEEP_ROOT", tmp_path / "kept")
    run = tmp_path / "hpn1-1"
    run.mkdir()
    (run / "controller.log").write_text("learned 16 NICs\n")
    target = keep.keep(run)
    assert (target / "controller.log").read_text() == "learned 16 NICs\n"
    assert str(target) in capsys.readouterr().err


def test_wanted_follows_the_environment(monkeypatch):
    monkeypatch.delenv("HPN_KEEP", raising=False)
    assert not keep.wanted()
    monkeypatch.setenv("HPN_KEEP", "1")
    assert keep.wanted()
