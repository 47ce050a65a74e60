"""The one fault-timeline engine (testbed/scenario/timeline.py): events in time order, at one
instant repairs before injections before other actions; a fault is repaired through its handle
`seconds` after it was injected, or ends when its inject returns; times on the given clock."""
import time

from testbed.scenario.timeline import Schedule, Timeline


class Handle:
    def __init__(self, log, name):
        self.log, self.name = log, name

    def repair(self):
        self.log.append(f"repair {self.name}")


def test_events_run_in_time_order_repairs_first_at_one_instant():
    log, schedule = [], Schedule()
    first = schedule.fault(0.0, lambda: log.append("inject a") or Handle(log, "a"), seconds=0.02)
    second = schedule.fault(0.02, lambda: log.append("inject b") or Handle(log, "b"))   # ends by itself
    schedule.action(0.02, lambda: log.append("start traffic"))
    schedule.action(0.0, lambda: log.append("start servers"))
    t0 = time.monotonic()
    schedule.play(t0, origin=t0 - 10.0)
    assert log == ["inject a", "start servers", "repair a", "inject b", "start traffic"]
    assert 10.0 <= first.injected < first.repaired and first.repaired - first.injected >= 0.02
    assert second.repaired >= second.injected >= 10.02 and second.handle.name == "b"


def test_a_timeline_is_its_four_phases():
    tl = Timeline(1.5, 2.0, 2.5, 3.0)
    assert (tl.fault_at, tl.seconds, tl.steps()) == (3.5, 9.0, [1.5, 2.0, 2.5, 3.0])
    assert Timeline.choose(True, (1, 2, 3, 4), (5, 6, 7, 8)).fault == 3


def test_the_progress_line_says_which_fault_and_the_time_left():
    """What a run shows while its faults play (issue 40: no phase says only "measuring")."""
    schedule = Schedule(end=14.0)
    schedule.fault(4.0, lambda: None, seconds=3.0, label="link-down p0s0h0-n0p0")
    flap = schedule.fault(9.0, lambda: None, label="flap p0s0h0-n0p0")           # ends by itself
    assert schedule.status(1.2) == "fault 1 of 2 (link-down p0s0h0-n0p0) in 3s; 13s left"
    assert schedule.status(5.0) == "fault 1 of 2 (link-down p0s0h0-n0p0) in place, repaired in 2s; 9s left"
    assert schedule.status(8.0) == "fault 2 of 2 (flap p0s0h0-n0p0) in 1s; 6s left"
    assert schedule.status(10.0) == "fault 2 of 2 (flap p0s0h0-n0p0) in place (ends by itself); 4s left"
    flap.repaired = 11.0
    assert schedule.status(12.0) == "no fault left; 2s left"
    assert schedule.status(20.0) == "no fault left; 0s left"
    assert Schedule(end=5.0).status(1.0) == "4s left"


def test_playing_notes_the_status_on_the_running_phase(monkeypatch):
    from testbed.core import progress
    monkeypatch.setattr(time, "monotonic", lambda: 100.0)      # the clock stands still
    schedule = Schedule(end=60.0)
    schedule.fault(0.0, lambda: None, label="flap p")           # ends by itself: no repair to wait for
    with progress.phase("measuring"):
        schedule.play(100.0)
        assert progress.status_text() == "measuring: no fault left; 1m00s left [0s]"
