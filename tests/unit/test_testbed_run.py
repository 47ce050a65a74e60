"""sh.testbed_run: a bench's child run is handed an interrupt and given time for its teardown,
never killed at once (subprocess.run kills it a quarter of a second later: its fabric stayed)."""
import signal
import subprocess

import pytest

from testbed.core import sh


class Child:
    """A Popen whose first communicate() is interrupted."""
    def __init__(self, argv, **kwargs):
        self.args, self.returncode, self.calls, self.signals = argv, None, [], []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def communicate(self, timeout=None):
        self.calls.append(timeout)
        if len(self.calls) == 1:
            raise KeyboardInterrupt
        self.returncode = 130
        return "", "interrupted; cleaned up\n"

    def send_signal(self, sig):
        self.signals.append(sig)

    def kill(self):
        self.signals.append(signal.SIGKILL)


def test_an_interrupt_is_handed_on_and_the_teardown_awaited(monkeypatch):
    made = []
    monkeypatch.setattr(subprocess, "Popen", lambda argv, **kw: made.append(Child(argv, **kw)) or made[-1])
    with pytest.raises(KeyboardInterrupt):
        sh.testbed_run(["run", "x"], teardown_s=7)
    (child,) = made
    assert child.args[-3:] == ["testbed", "run", "x"]
    assert child.signals == [signal.SIGINT] and child.calls == [None, 7]


def test_the_child_s_output_comes_back():
    done = sh.testbed_run(["--version"])
    assert done.returncode == 0 and done.stdout.strip()
