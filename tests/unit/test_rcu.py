"""The one kernel setting a teardown changes (testbed/emulation/net/rcu.py): only from 0, recorded
before it is written, put back by the teardown's last step, and nothing else is ever written
from a run state. No root: the setting is a temporary file."""
from testbed.emulation.net import rcu
from testbed.emulation.run import teardown


class FakeState:
    def __init__(self, knob=None):
        self.data, self.knob = {"knobs": []}, knob

    def add(self, key, *items):
        assert self.knob is None or self.knob.read_text().strip() == "0", "recorded after the write"
        self.data[key].extend(items)


def test_expedited_only_from_0_recorded_first_and_put_back(tmp_path, monkeypatch):
    knob = tmp_path / "rcu_expedited"
    knob.write_text("0\n")
    monkeypatch.setattr(rcu, "KNOB", knob)
    monkeypatch.setattr(rcu, "KNOBS", {str(knob)})
    state = FakeState(knob)
    rcu.expedite(state)
    assert knob.read_text() == "1" and state.data["knobs"] == [f"{knob}=0"]
    assert teardown._knobs(state) == [f"{knob} back to 0"] and knob.read_text() == "0"
    knob.write_text("1")                      # someone else's 1: left alone, nothing recorded
    other = FakeState()
    rcu.expedite(other)
    assert other.data["knobs"] == [] and rcu.restore(other.data["knobs"]) == []


def test_a_run_state_cannot_make_clean_write_anything_else(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    assert rcu.restore([f"{victim}=0", f"{rcu.KNOB}=2", "garbage"]) == []
    assert victim.read_text() == "keep"


def test_no_setting_to_change_is_no_error(tmp_path, monkeypatch):
    monkeypatch.setattr(rcu, "KNOB", tmp_path / "absent")
    state = FakeState()
    rcu.expedite(state)
    assert state.data["knobs"] == []
