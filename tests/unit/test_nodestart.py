"""Mininet nodes started side by side (testbed/emulation/nodestart.py): they join the network in
the order asked, and a node that started before another failed still joins (so the teardown
ends its shell). No root: fake node classes."""
import threading
import time

import pytest

from testbed.emulation import nodestart


class FakeNet:
    listenPort, inNamespace = None, False

    def __init__(self):
        self.switches, self.hosts, self.nameToNode = [], [], {}


class Node:
    setups = 0
    running = 0
    most = 0
    lock = threading.Lock()

    @classmethod
    def checkSetup(cls):
        cls.setups += 1

    def __init__(self, name, **params):
        with Node.lock:
            Node.running += 1
            Node.most = max(Node.most, Node.running)
        time.sleep(0.02 if name.endswith("0") else 0.001)   # the first ones finish last
        with Node.lock:
            Node.running -= 1
        if name == "bad":
            raise RuntimeError("no shell")
        self.name, self.params = name, params


def test_nodes_join_in_the_order_asked_with_mininets_defaults_and_start_side_by_side():
    net = FakeNet()
    nodes = [("switch", f"s{i}", Node, {"dpid": str(i)}) for i in range(4)] + \
            [("host", f"h{i}", Node, {"ip": None}) for i in range(4)]
    nodestart.add_nodes(net, nodes, workers=4)
    assert [n.name for n in net.switches] == ["s0", "s1", "s2", "s3"]
    assert [n.name for n in net.hosts] == ["h0", "h1", "h2", "h3"]
    assert net.switches[0].params == {"dpid": "0", "listenPort": None, "inNamespace": False}
    assert net.hosts[0].params == {"ip": None} and set(net.nameToNode) == {n for _, n, _, _ in nodes}
    assert Node.setups == 1 and Node.most > 1


def test_a_node_that_fails_raises_after_the_others_joined():
    net = FakeNet()
    with pytest.raises(RuntimeError, match="no shell"):
        nodestart.add_nodes(net, [("host", "h0", Node, {}), ("host", "bad", Node, {}),
                                  ("host", "h2", Node, {})], workers=3)
    assert [n.name for n in net.hosts] == ["h0", "h2"]
