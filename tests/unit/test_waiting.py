"""How long the emulator's processes waited for a CPU (testbed/measure/waiting.py): the
arithmetic on fake schedstat numbers, and the reading of a fake /proc tree. The real kernel's
numbers: tests/integration/test_cpu_precedence.py."""
from pathlib import Path

import pytest

from testbed.measure import waiting
from testbed.measure.waiting import Waiting, WaitReport


def test_a_process_waits_what_its_worst_thread_waited_over_the_window():
    before = {"ovs-vswitchd": {1: 1_000_000_000, 2: 0}, "controller": {5: 10}}
    after = {"ovs-vswitchd": {1: 1_500_000_000, 2: 300_000_000, 3: 200_000_000},   # 3: born
             "controller": {5: 10}}
    threads = waiting.waited(before, after)
    assert threads == {"ovs-vswitchd": {1: 0.5, 2: 0.3, 3: 0.2}, "controller": {5: 0.0}}
    per = waiting.fractions(threads, 2.0)
    assert per == {"ovs-vswitchd": 0.25, "controller": 0.0}     # thread 1's 0.5 s of 2 s
    assert waiting.worst(per) == ("ovs-vswitchd", 0.25)
    assert waiting.worst({}) is None


def test_a_reused_thread_id_counts_from_zero_and_an_empty_window_is_zero():
    assert waiting.waited({"a": {7: 900}}, {"a": {7: 500_000_000}})["a"][7] == pytest.approx(0.4999991)
    assert waiting.waited({"a": {7: 900_000_000}}, {"a": {7: 100_000_000}}) == {"a": {7: 0.1}}
    assert waiting.fractions({"a": {1: 5.0}}, 0.0) == {"a": 0.0}
    assert waiting.fractions({"a": {}}, 1.0) == {"a": 0.0}       # no thread left: nothing waited


def test_threads_waiting_at_once_count_once_however_many_they_are():
    """Thirty threads of a controller each queued 3 ms of a 15 ms window: its work was held back
    3 ms, not 90 ms; one starved thread waiting most of the window shows whole."""
    many = {"controller": {tid: 0.003 for tid in range(30)}}
    assert waiting.fractions(many, 0.015)["controller"] == pytest.approx(0.2)
    starved = {"ovs-vswitchd": {1: 0.9, 2: 0.01, 3: 0.0}}
    assert waiting.fractions(starved, 1.0)["ovs-vswitchd"] == pytest.approx(0.9)


def test_schedstat_and_cpu_pressure_are_parsed():
    assert waiting.run_delay("809081097 629504154 987\n") == 629504154
    text = "some avg10=1.00 avg60=0.50 avg300=0.10 total=250000\nfull avg10=0 avg60=0 avg300=0 total=9\n"
    assert waiting.pressure_total(text) == 250000
    assert waiting.pressure_total("") is None
    assert waiting.pressure_fraction(100_000, 600_000, 2.0) == 0.25
    assert waiting.pressure_fraction(None, 5, 1.0) is None


def fake_proc(root: Path, threads: dict[int, dict[int, int]]) -> None:
    for pid, tids in threads.items():
        for tid, ns in tids.items():
            d = root / str(pid) / "task" / str(tid)
            d.mkdir(parents=True, exist_ok=True)
            (d / "schedstat").write_text(f"123 {ns} 4\n")


def test_a_window_over_a_fake_proc_tree(tmp_path):
    """Read at the start, read at the stop: the per-process fractions, the worst, the gone."""
    proc, cgroup = tmp_path / "proc", tmp_path / "cg"
    cgroup.mkdir()
    (cgroup / "cpu.pressure").write_text("some avg10=0 avg60=0 avg300=0 total=1000000\n")
    fake_proc(proc, {10: {10: 0, 11: 0}, 20: {20: 0}, 30: {30: 0}})
    clock = iter([100.0, 104.0]).__next__
    snap = Waiting.start({"ovs-vswitchd": 10, "controller": 20, "iperf3 h1": 30}, cgroup, proc, clock)
    fake_proc(proc, {10: {10: 1_000_000_000, 11: 1_000_000_000}, 20: {20: 400_000_000}})
    (proc / "30" / "task" / "30" / "schedstat").unlink()
    (proc / "30" / "task" / "30").rmdir()
    (proc / "30" / "task").rmdir()
    (cgroup / "cpu.pressure").write_text("some avg10=0 avg60=0 avg300=0 total=3000000\n")
    report = snap.stop()
    assert report == WaitReport(4.0, {"ovs-vswitchd": {10: 1.0, 11: 1.0}, "controller": {20: 0.4}},
                                pressure=0.5, gone=("iperf3 h1",))
    assert report.per_process == {"ovs-vswitchd": 0.25, "controller": 0.1}   # its worst thread: 1 s of 4
    assert report.worst == ("ovs-vswitchd", 0.25)


def test_a_window_without_a_cgroup_has_no_pressure(tmp_path):
    proc = tmp_path / "proc"
    fake_proc(proc, {1: {1: 0}})
    clock = iter([0.0, 1.0]).__next__
    report = Waiting.start({"a": 1}, None, proc, clock).stop()
    assert report.pressure is None and report.worst == ("a", 0.0)


def test_a_runs_processes_are_named_by_their_part_and_host():
    names = waiting.role_names([(5, "controller.launcher", None), (6, "testbed.inhost.agent", "h1"),
                                (7, "iperf3", "h1"), (8, "iperf3", "h1"), (9, "custom", "h2"),
                                (10, "mininet:", None)])
    assert names == {"controller": 5, "host agent h1": 6, "iperf3 h1": 7, "iperf3 h1 #2": 8,
                     "custom h2": 9, "switch shell": 10}


def test_a_run_is_read_from_its_state(tmp_path, monkeypatch):
    """The hosts' namespaces tell which host a process runs in; OVS's daemons come first."""
    proc = tmp_path / "proc"
    for pid, ns in ((1, "a"), (2, "a"), (3, "root")):
        (proc / str(pid) / "ns").mkdir(parents=True)
        (tmp_path / ns).touch()
        (proc / str(pid) / "ns" / "net").symlink_to(tmp_path / ns)

    class State:
        data = {"hosts": {"h1": 1}, "knobs": [f"cpu-cgroup:{tmp_path}"]}

        def live_processes(self):
            return [(1, "mininet:"), (2, "testbed.inhost.agent"), (3, "controller.launcher")]
    from testbed.emulation import cpu_precedence
    monkeypatch.setattr(cpu_precedence, "daemons", lambda: {"ovs-vswitchd": 99})
    assert waiting.run_roles(State(), proc) == {"ovs-vswitchd": 99, "shell h1": 1, "host agent h1": 2,
                                                "controller": 3}
    assert waiting.run_cgroup(State()) is None
    (tmp_path / "cpu.pressure").write_text("some total=0\n")
    assert waiting.run_cgroup(State()) == tmp_path
