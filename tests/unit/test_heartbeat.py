"""The controller's heartbeat comes from its apps' event loops: one app stuck in a handler stops
it, though the beating thread and every other app go on."""
import threading

from controller.heartbeat import Beat, Beats


class App:
    def __init__(self, name):
        self.name, self.handlers, self.queue = name, {}, []
        self._events_sem = threading.BoundedSemaphore(3)     # os-ken's: the queue's room
        self.events = self                                    # os-ken's queue: put()

    def register_handler(self, ev_cls, handler):
        self.handlers.setdefault(ev_cls, []).append(handler)

    def put(self, item):
        self.queue.append(item[0])

    def loop(self):           # the app's event loop handling what is queued
        while self.queue:
            ev = self.queue.pop(0)
            self._events_sem.release()
            for handler in self.handlers.get(type(ev), []):
                handler(ev)


def test_the_heartbeat_is_the_oldest_answer_and_a_stuck_loop_stops_it():
    now = [0.0]
    ours, users = App("ours"), App("users")
    beats = Beats([ours, users], clock=lambda: now[0])
    for t in (1.0, 2.0, 3.0):
        now[0] = t
        beats.send()
        ours.loop()
        if t < 2.0:
            users.loop()          # then the user's app loops forever in a handler
    assert beats.answered == {"ours": 3.0, "users": 1.0} and beats.oldest() == 1.0


def test_a_stuck_app_gets_one_beat_at_a_time():
    app = App("stuck")
    beats = Beats([app])
    for _ in range(5):
        beats.send()
    assert len(app.queue) == 1 and isinstance(app.queue[0], Beat)


def test_a_handler_that_says_it_is_working_keeps_its_loop_alive_without_queueing_beats():
    """Long work on purpose (a whole fabric's rules) says `working`: the app's answer is fresh
    although its loop has not handled the Beat, and no second Beat is queued behind the first."""
    now = [0.0]
    app = App("ours")
    beats = Beats([app], clock=lambda: now[0])
    beats.send()
    for t in (1.0, 2.0, 3.0):     # the handler runs on, saying it progresses
        now[0] = t
        beats.working("ours")
        beats.send()
    assert beats.oldest() == 3.0 and len(app.queue) == 1


def test_the_rule_state_says_it_progresses_once_per_nic_computed():
    from controller.rulestate import RuleState
    from testbed.model import make_fabric, policies
    fab = make_fabric("hpn", {})
    state = RuleState(fab, policies.normalize(fab, {}))
    said = []
    state.working = lambda: said.append(1)
    for nic in fab.nics():
        state.learned[nic.ip] = type("Host", (), {"mac": nic.mac, "at": set(fab.attachments(nic))})()
    state.compute(list(state.learned))
    assert len(said) == len(fab.nics())


def test_a_full_queue_is_skipped_not_waited_on():
    """The beating thread never waits on an app whose queue is full (os-ken's _send_event
    would): that app gets its Beat later, the others theirs now."""
    full, other = App("full"), App("other")
    for _ in range(3):
        full._events_sem.acquire()
    beats = Beats([full, other])
    beats.send()
    assert full.queue == [] and len(other.queue) == 1 and beats.out == {"other"}
    full._events_sem.release()
    beats.send()
    assert len(full.queue) == 1 and beats.out == {"full", "other"}


def test_a_queue_kept_full_by_a_flood_is_busy_not_hung_while_its_loop_drains_it():
    """Packet-ins faster than the loop drains them keep the queue full and every Beat out: the
    loop taking events (a new first one) counts as an answer; a loop stuck with the same first
    event does not."""
    now = [0.0]
    app = App("flooded")
    beats = Beats([app], clock=lambda: now[0])
    for t, flood in ((1.0, "a"), (2.0, "b"), (3.0, "c")):
        now[0] = t
        app.queue[:] = [flood] * 3
        while app._events_sem.acquire(blocking=False):   # the flood takes every free place
            pass
        beats.send()
    assert beats.answered["flooded"] == 3.0 and app.queue == ["c"] * 3
    for t in (4.0, 5.0):          # then its loop hangs in a handler, the queue still full
        now[0] = t
        beats.send()
    assert beats.oldest() == 3.0
