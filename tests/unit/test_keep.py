"""A run's directory is kept past teardown with --keep (HPN_KEEP=1) and always on failure
(testbed/emulation/run/keep.py); Ctrl-C is not a failure. A kept directory holds the parts'
output too (iperf3's JSON, the probes' logs), numbered so that a part run again does not
overwrite it; without --keep each is removed once read."""
import os
from types import SimpleNamespace

import pytest

from testbed.core import interrupts
from testbed.core.errors import PartLost
from testbed.emulation.run import keep, runstate
from testbed.experiments.probes import RttProbe
from testbed.measure.meters import GapProbe
from testbed.workload import traffic


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


# --- what a kept run directory holds: the parts' output, not only the controller's files ---

IPERF = '{"start": {}, "end": {"sum_received": {"bits_per_second": 2e6}}}'
PINGS = ("[1000.000100] 64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.10 ms\n"
         "[1000.100100] 64 bytes from 10.0.0.2: icmp_seq=2 ttl=64 time=0.20 ms\n"
         "2 packets transmitted, 2 received, 0% packet loss\n")


class Ended:
    returncode = 0

    def poll(self):
        return 0


class Host:
    """A host whose spawned command has already ended, having written `text` to its `out`."""

    def __init__(self, text):
        self.text = text

    def spawn(self, command, marker, out=None):
        out.write_text(self.text)
        return Ended()


def an_emulation(tmp_path, text=""):
    state = runstate.RunState("hpn1-1")
    state.dir = tmp_path / "hpn1-1"
    state.dir.mkdir()
    return SimpleNamespace(state=state, net={"h0": Host(text)})


NIC_A = SimpleNamespace(host="h0", ip="10.0.0.1")
NIC_B = SimpleNamespace(host="h1", ip="10.0.0.2")


def read_every_part(emu):
    """What a run does with each part's output: an iperf3 client, an RTT probe, a gap probe."""
    out = emu.state.output("iperf3.json")
    out.write_text(IPERF)
    client = traffic.Client(traffic.Flow(NIC_A, NIC_B, 5201), Ended(), out)
    assert traffic.received_mbps(traffic.wait_client(emu, client, 1)) == 2.0
    assert len(RttProbe(emu, NIC_A, NIC_B, 0.2).wait(1, 1000.0)) == 2
    assert GapProbe(emu, NIC_A, NIC_B, 0.002).wait(1).received == 2
    emu.state.record("prober.json", '{"rounds": 3}\n')
    return sorted(p.name for p in emu.state.dir.iterdir())


def test_kept_runs_keep_the_iperf3_output_and_probe_logs(tmp_path, monkeypatch):
    monkeypatch.setenv("HPN_KEEP", "1")
    emu = an_emulation(tmp_path, PINGS)
    names = read_every_part(emu)
    assert names == ["iperf3-1.json", "probe-10.0.0.1-10.0.0.2-3.txt", "prober-4.json",
                     "rtt-10.0.0.1-10.0.0.2-2.txt"]
    assert (emu.state.dir / "iperf3-1.json").read_text() == IPERF
    assert (emu.state.dir / "prober-4.json").read_text() == '{"rounds": 3}\n'


def test_without_keep_each_output_is_removed_once_read(tmp_path, monkeypatch):
    monkeypatch.delenv("HPN_KEEP", raising=False)
    assert read_every_part(an_emulation(tmp_path, PINGS)) == []


def test_a_part_run_again_does_not_overwrite_its_first_output(tmp_path):
    state = an_emulation(tmp_path).state
    first = state.output("probe-10.0.0.1-10.0.0.2.txt")
    first.write_text("round 1")
    other = runstate.RunState("hpn1-1")        # another process attached to the same run
    other.dir = state.dir
    assert other.output("probe-10.0.0.1-10.0.0.2.txt") != first
