"""The emulator first in line for the CPU (testbed/core/precedence.py, testbed/emulation/
cpu_precedence.py): which mechanism a machine offers, read from a fake tree; what a run
records; and that a run state cannot make `clean` move a thread or remove a directory that is
not a run's. No root: the real moves are tests/integration/test_cpu_precedence.py's."""
from pathlib import Path

from testbed.core import precedence
from testbed.emulation import cpu_precedence
from testbed.emulation.run import teardown

V1 = "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n"
V1_CO = "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,cpu,cpuacct 0 0\n"
V2 = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate 0 0\n"
V2_SIDE = "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n"
OTHER = "proc /proc proc rw 0 0\ncgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n"


def tree(tmp_path: Path, mounts: str, files: dict[str, str]) -> Path:
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mounts").write_text(mounts)
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_cgroup2_with_the_cpu_controller_is_first(tmp_path):
    root = tree(tmp_path, OTHER + V1 + V2, {
        "sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory pids\n",
        "sys/fs/cgroup/cgroup.subtree_control": "cpu memory pids\n",
        "sys/fs/cgroup/cpu/cpu.shares": "1024\n"})
    m = precedence.choose(root)
    assert (m.kind, m.hierarchy, m.knob, m.value) == ("cgroup2", root / "sys/fs/cgroup", "cpu.weight",
                                                      precedence.WEIGHT)
    assert m.move_file == "cgroup.procs" and m.threads_file == "cgroup.threads"
    assert m.describe() == f"cgroup v2 cpu.weight {precedence.WEIGHT}"


def test_a_cgroup2_mount_without_cpu_for_its_children_gives_way_to_v1(tmp_path):
    """This machine's case: a cgroup2 mount with no controllers, a v1 cpu hierarchy."""
    root = tree(tmp_path, V1 + V2_SIDE, {"sys/fs/cgroup/unified/cgroup.controllers": "",
                                         "sys/fs/cgroup/unified/cgroup.subtree_control": "",
                                         "sys/fs/cgroup/cpu/cpu.shares": "1024\n"})
    m = precedence.choose(root)
    assert (m.kind, m.hierarchy, m.knob) == ("cgroup1", root / "sys/fs/cgroup/cpu", "cpu.shares")
    assert m.move_file == "tasks" and m.describe() == f"cgroup v1 cpu.shares {precedence.SHARES}"
    # cpu offered but not enabled for children (a container's cgroup with processes in it)
    root2 = tree(tmp_path / "b", V2, {"sys/fs/cgroup/cgroup.controllers": "cpu memory",
                                      "sys/fs/cgroup/cgroup.subtree_control": "memory"})
    assert precedence.choose(root2) == precedence.NICE_ONLY


def test_a_comounted_v1_cpu_hierarchy_counts_and_a_read_only_one_does_not(tmp_path):
    root = tree(tmp_path, V1_CO, {"sys/fs/cgroup/cpu,cpuacct/cpu.shares": "1024"})
    assert precedence.choose(root).kind == "cgroup1"
    ro = tree(tmp_path / "ro", V1.replace("rw,", "ro,"), {"sys/fs/cgroup/cpu/cpu.shares": "1024"})
    assert precedence.choose(ro) == precedence.NICE_ONLY


def test_nice_is_the_fallback_and_not_root_changes_nothing(tmp_path):
    root = tree(tmp_path, OTHER, {})
    assert precedence.choose(root) == precedence.NICE_ONLY
    assert precedence.NICE_ONLY.describe() == f"nice {precedence.NICE}"
    assert precedence.choose(root, is_root=False).describe() == "none"
    assert precedence.choose(tmp_path / "absent") == precedence.NICE_ONLY


def test_a_tasks_cgroup_is_read_from_its_hierarchy_line():
    text = "12:cpuset:/\n4:cpu,cpuacct:/user.slice/x\n1:name=systemd:/init.scope\n0::/user.slice/y\n"
    assert precedence.cgroup_of(text, "cgroup1") == "/user.slice/x"
    assert precedence.cgroup_of(text, "cgroup2") == "/user.slice/y"
    assert precedence.cgroup_of("3:cpuacct:/a\n", "cgroup1") is None


class FakeState:
    run_id, admit = "hpnT-1", None

    def __init__(self):
        self.data = {"knobs": [], "pids": [], "about": {}}

    def add(self, key, *items):
        self.data[key].extend(items)

    def save(self):
        pass

    def live_processes(self):
        return []


def test_the_run_cgroup_is_recorded_before_it_is_made(tmp_path, monkeypatch):
    top = tmp_path / "cpu"
    top.mkdir()
    mech = precedence.Mechanism("cgroup1", top, "cpu.shares", precedence.SHARES)
    state = FakeState()
    group = top / f"{precedence.PREFIX}{state.run_id}"

    def add(key, *items):
        assert not group.exists(), "recorded after it was made"
        state.data[key].extend(items)
    state.add = add
    monkeypatch.setattr(cpu_precedence, "daemons", dict)
    assert cpu_precedence.apply(state, mech) == mech
    assert state.data["knobs"] == [f"{cpu_precedence.GROUP}{group}"]
    assert (group / "cpu.shares").read_text() == str(precedence.SHARES)
    assert state.data["about"]["cpu_precedence"] == mech.describe() and state.admit is not None


def test_a_hierarchy_that_refuses_falls_back_to_nice(tmp_path, monkeypatch):
    mech = precedence.Mechanism("cgroup1", tmp_path / "absent", "cpu.shares", precedence.SHARES)
    monkeypatch.setattr(cpu_precedence, "daemons", dict)
    state = FakeState()
    assert cpu_precedence.apply(state, mech) == precedence.NICE_ONLY
    assert state.data["about"]["cpu_precedence"] == precedence.NICE_ONLY.describe()
    none = FakeState()
    assert cpu_precedence.apply(none, precedence.NONE) == precedence.NONE and none.admit is None


def test_a_run_state_cannot_make_clean_move_or_remove_anything_else(tmp_path, monkeypatch):
    """A directory not named as a run's cgroup, or outside every cgroup hierarchy, stays; a
    back-file outside a hierarchy is never written."""
    top = tmp_path / "cpu"
    (top / "victim").mkdir(parents=True)
    monkeypatch.setattr(precedence, "hierarchies", lambda root=None: [top])
    outside = tmp_path / f"{precedence.PREFIX}x"
    outside.mkdir()
    target = tmp_path / "tasks"
    assert not cpu_precedence._back_file(str(target))
    assert not cpu_precedence._back_file(f"{top}/../tasks")
    assert cpu_precedence._back_file(f"{top}/a/tasks")
    recorded = [f"{cpu_precedence.GROUP}{top / 'victim'}", f"{cpu_precedence.GROUP}{outside}",
                f"{cpu_precedence.MOVE}1:5={target}", f"{cpu_precedence.NICE}1:x:-10=0", "garbage"]
    assert cpu_precedence.restore(recorded) == []
    assert (top / "victim").is_dir() and outside.is_dir() and not target.exists()


def test_the_teardown_puts_a_runs_cgroup_away(tmp_path, monkeypatch):
    """An empty run cgroup (its processes ended) is removed by the teardown's last step."""
    top = tmp_path / "cpu"
    group = top / f"{precedence.PREFIX}r"
    group.mkdir(parents=True)
    monkeypatch.setattr(precedence, "hierarchies", lambda root=None: [top])
    state = FakeState()
    state.data["knobs"] = [f"{cpu_precedence.GROUP}{group}"]
    assert teardown._knobs(state) == [f"CPU precedence: 0 threads back to their cgroups, {group} removed"]
    assert not group.exists()


def test_entries_are_parsed_by_kind():
    recorded = [f"{cpu_precedence.MOVE}12:345=/sys/fs/cgroup/cpu/tasks",
                f"{cpu_precedence.NICE}13:346:-10=0", f"{cpu_precedence.MOVE}x:1=/t"]
    assert cpu_precedence._entries(recorded, cpu_precedence.MOVE) == {12: (345, "/sys/fs/cgroup/cpu/tasks")}
    assert cpu_precedence._entries(recorded, cpu_precedence.NICE) == {13: (346, "-10=0")}
