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
