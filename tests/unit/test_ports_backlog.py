"""A port's queue backlog is read from that one interface's classes, never a namespace-wide dump
(whose cost grows with the fabric's ports at every read)."""
from testbed.inhost.ports import backlog


class Msg(dict):
    def get_attr(self, name):
        return self.get(name)


class FakeIPRoute:
    def __init__(self, classes):
        self.classes, self.asked = classes, []

    def get_classes(self, index=None):
        self.asked.append(index)
        return self.classes.get(index, [])

    def get_qdiscs(self, index=None):
        raise AssertionError("a qdisc dump answers with every qdisc of the namespace")


def queued(n):
    return Msg(TCA_STATS2=Msg(TCA_STATS_QUEUE={"backlog": n, "qlen": 1}))


def test_backlog_is_the_interfaces_class_backlog_asked_by_index():
    ipr = FakeIPRoute({7: [queued(4110)], 8: [queued(0)]})
    assert backlog(ipr, 7) == 4110
    assert backlog(ipr, 8) == 0
    assert ipr.asked == [7, 8]


def test_an_unshaped_port_or_one_without_stats_has_no_backlog():
    ipr = FakeIPRoute({3: [Msg()]})
    assert backlog(ipr, 3) == 0
    assert backlog(ipr, 4) == 0
