"""The CPU busy fraction a verdict reads covers the windows its traffic moved in (from "go"),
their union when jobs overlap, and the whole call where no window was opened."""
import pytest

from testbed.core import cpuwindow
from testbed.measure import meters


@pytest.fixture
def clock(monkeypatch):
    """A fake /proc/stat: each step adds `busy` busy and `idle` idle jiffies."""
    state = {"total": 0, "idle": 0}

    def step(busy: int, idle: int) -> None:
        state["total"] += busy + idle
        state["idle"] += idle
    now = lambda: (state["total"], state["idle"])   # noqa: E731
    monkeypatch.setattr(cpuwindow, "cpu_times", now)
    monkeypatch.setattr(meters, "cpu_times", now)
    return step


def test_without_a_window_the_whole_call_counts(clock):
    _, busy = meters.cpu_busy_fraction(lambda: clock(busy=90, idle=10))
    assert busy == pytest.approx(0.9)


def test_the_start_up_before_go_is_left_out(clock):
    def run():
        clock(busy=100, idle=0)          # agents starting: no timing covers this
        with cpuwindow.moving():
            clock(busy=30, idle=70)      # the traffic
        clock(busy=10, idle=0)           # agents exiting
    _, busy = meters.cpu_busy_fraction(run)
    assert busy == pytest.approx(0.3)


def test_overlapping_windows_count_once_and_the_gap_between_jobs_not_at_all(clock):
    def run():
        with cpuwindow.moving():
            clock(busy=20, idle=80)
            with cpuwindow.moving():     # a second job's traffic while the first moves
                clock(busy=50, idle=50)
            clock(busy=10, idle=90)
        clock(busy=100, idle=0)          # between phases: start-ups
        with cpuwindow.moving():
            clock(busy=40, idle=60)
    _, busy = meters.cpu_busy_fraction(run)
    assert busy == pytest.approx((20 + 50 + 10 + 40) / 400)
    assert cpuwindow._open == 0


def test_a_window_that_raised_is_closed(clock):
    with pytest.raises(RuntimeError):
        with cpuwindow.moving():
            raise RuntimeError("an agent failed")
    _, busy = meters.cpu_busy_fraction(lambda: clock(busy=50, idle=50))
    assert busy == pytest.approx(0.5)


class FakeAgent:
    """An agent process that has started and said "ready"."""
    def __init__(self):
        self.stdin = self
        self.written = []

    def write(self, text):
        self.written.append((text, cpuwindow._open))

    def flush(self):
        pass

    def poll(self):
        return 0

    def wait(self):
        return 0


def test_the_collectives_runner_opens_the_window_at_go_and_closes_it_after_the_results(monkeypatch):
    from testbed.workload.collectives.runner import Runner, Send
    agent, seen = FakeAgent(), {}
    monkeypatch.setattr(Runner, "_specs", lambda self, sends: ({"h0": {}}, [6000]))
    monkeypatch.setattr(Runner, "_start", lambda self, per_host, agents: agents.update(h0=agent))

    def results(self, agents, t_go):
        seen["open"] = cpuwindow._open
        return [{"send": [[0, t_go, t_go + 1.0, [5]]], "recv": [[0, 5, t_go, t_go + 1.0]]}]
    monkeypatch.setattr(Runner, "_results", results)
    elapsed, [result] = Runner(emu=None).run_sends([Send(None, None, 5)])
    assert agent.written == [("go\n", 1)]      # "go" is said inside the window
    assert seen["open"] == 1 and cpuwindow._open == 0
    assert result.received == 5 and elapsed == pytest.approx(1.0)
