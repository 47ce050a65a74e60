"""The watchdog's Open vSwitch backstop: a switch counts as lost only when two answers in a row
say so, so one odd answer of a busy database does not end a run; a real loss still does."""
from testbed.emulation.control.watchdog import Watchdog

TARGET = "unix:/run/openvswitch/hpn-testbed-x/of.sock"


def watchdog(answers):
    dog = Watchdog(controller=None, bridges=["s1", "s2"], target=TARGET)
    replies = iter(answers)
    dog.controller_rows = lambda: next(replies)
    return dog


def both(connected=True):
    return [[TARGET, connected], [TARGET, connected]]


def test_one_odd_answer_is_not_a_loss():
    dog = watchdog([both(), [[TARGET, True]], both(), both()])
    assert [dog._switches_gone() for _ in range(4)] == [None, None, None, None]


def test_a_lost_entry_seen_twice_is_reported():
    dog = watchdog([both(), [[TARGET, True]], [[TARGET, True]]])
    assert [dog._switches_gone() for _ in range(3)] == \
        [None, None, "1 switches of the run lost their controller entry"]


def test_a_connection_down_seen_twice_is_reported():
    dog = watchdog([both(), both(False), both(False)])
    assert dog._switches_gone() is None and dog._switches_gone() is None
    assert dog._switches_gone() == "2 switches report their controller connection down"


def test_no_answer_is_no_news():
    dog = watchdog([None, both(), None, [[TARGET, True]], both()])
    assert [dog._switches_gone() for _ in range(5)] == [None] * 5
