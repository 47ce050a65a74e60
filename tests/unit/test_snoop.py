"""Open vSwitch's snoop listeners held off (testbed/emulation/snoop.py): each hold recorded before
it is made, a path that exists left alone, and the teardown removing only the empty directories
it recorded in OVS's run directory, nothing a run state names elsewhere. No root: the run
directory is a temporary one."""
import os

from testbed.emulation import snoop, teardown


class FakeState:
    def __init__(self):
        self.data = {"knobs": []}

    def add(self, key, *items):
        for item in items:
            assert not os.path.lexists(item[len(snoop.PREFIX):]), "recorded after it was made"
        self.data[key].extend(items)


def test_held_recorded_first_and_released_by_the_teardown(tmp_path, monkeypatch):
    state = FakeState()
    assert snoop.hold(state, str(tmp_path), ["s1", "s2"]) == 2
    for bridge in ("s1", "s2"):
        where = tmp_path / f"{bridge}.snoop"
        assert where.is_dir() and not any(where.iterdir()) and (where.stat().st_mode & 0o777) == 0o700
    assert state.data["knobs"] == [f"{snoop.PREFIX}{tmp_path}/s1.snoop", f"{snoop.PREFIX}{tmp_path}/s2.snoop"]
    monkeypatch.setattr(snoop.system, "ovs_rundir", lambda: str(tmp_path))
    assert teardown._knobs(state) == ["2 snoop listener holds of Open vSwitch"]
    assert list(tmp_path.iterdir()) == []
    assert snoop.release(state.data["knobs"], str(tmp_path)) == []     # twice: nothing more


def test_a_path_that_exists_is_not_ours(tmp_path):
    (tmp_path / "s1.snoop").write_text("someone's")
    (tmp_path / "s2.snoop").symlink_to(tmp_path / "elsewhere")
    state = FakeState()
    assert snoop.hold(state, str(tmp_path), ["s1", "s2"]) == 0
    assert state.data["knobs"] == []
    assert (tmp_path / "s1.snoop").read_text() == "someone's"


def test_a_run_state_cannot_make_the_teardown_remove_anything_else(tmp_path):
    rundir, elsewhere = tmp_path / "run", tmp_path / "other"
    rundir.mkdir()
    elsewhere.mkdir()
    (elsewhere / "x.snoop").mkdir()          # not in the run directory
    (rundir / "notes").mkdir()               # not a snoop path
    (rundir / "full.snoop").mkdir()          # not empty
    (rundir / "full.snoop" / "keep").write_text("keep")
    (rundir / "file.snoop").write_text("keep")
    (rundir / "link.snoop").symlink_to(elsewhere / "x.snoop")
    recorded = [f"{snoop.PREFIX}{p}" for p in (elsewhere / "x.snoop", rundir / "notes", rundir / "full.snoop",
                                               rundir / "file.snoop", rundir / "link.snoop")]
    assert snoop.release(recorded + ["garbage", f"{snoop.PREFIX}"], str(rundir)) == []
    assert (elsewhere / "x.snoop").is_dir() and (rundir / "notes").is_dir()
    assert (rundir / "full.snoop" / "keep").exists() and (rundir / "file.snoop").exists()
    assert (rundir / "link.snoop").is_symlink()


def test_nothing_recorded_asks_nothing_of_open_vswitch(monkeypatch):
    def no(*_):
        raise AssertionError("asked for OVS's run directory")
    monkeypatch.setattr(snoop.system, "ovs_rundir", no)
    assert snoop.release(["/sys/kernel/rcu_expedited=0"]) == []
