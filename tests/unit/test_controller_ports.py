"""The controller's view of port carrier: the ports a switch reports as it connects (os-ken's
port-desc reply, still in CONFIG) and every port-status after, whatever the switch's state;
only the fabric's own ports count, and only a change makes routes stale."""
import logging
from types import SimpleNamespace as NS

from os_ken.ofproto import ofproto_v1_5 as ofp

from controller.app import FabricController

LEAF = 7


def controller():
    """A FabricController with only what port handling reads (no os-ken app manager)."""
    c = object.__new__(FabricController)
    c.names = {LEAF: "leaf0"}
    c.ports = {"leaf0": {("leaf0", 1), ("leaf0", 2)}}
    c.down, c.stale = set(), []
    c.mark_stale = c.stale.append
    c.logger = logging.getLogger("test")
    return c


def desc(port_no, down):
    return NS(port_no=port_no, state=ofp.OFPPS_LINK_DOWN if down else 0)


def reply(dpid, *ports):
    return NS(msg=NS(datapath=NS(id=dpid, ofproto=ofp), body=list(ports)))


def status(dpid, port_no, down, reason=ofp.OFPPR_MODIFY):
    return NS(msg=NS(datapath=NS(id=dpid, ofproto=ofp), desc=desc(port_no, down), reason=reason))


def test_a_port_already_down_when_the_switch_connects_is_down():
    c = controller()
    c.on_port_desc(reply(LEAF, desc(1, True), desc(2, False), desc(ofp.OFPP_LOCAL, True)))
    assert c.down == {("leaf0", 1)} and c.stale == [None]


def test_port_status_counts_only_changes_of_fabric_ports():
    c = controller()
    c.on_port_status(status(LEAF, 2, True))
    c.on_port_status(status(LEAF, 2, True))                      # no change: nothing stale
    c.on_port_status(status(LEAF, 99, True))                     # not a fabric port
    c.on_port_status(status(None, 2, False))                     # before features: no dpid yet
    assert c.down == {("leaf0", 2)} and c.stale == [None]
    c.on_port_status(status(LEAF, 2, False))
    c.on_port_status(status(LEAF, 1, False, reason=ofp.OFPPR_DELETE))   # deleted = down
    assert c.down == {("leaf0", 1)} and c.stale == [None, None, None]


def test_port_handlers_run_before_os_ken_moves_a_switch_to_main():
    for handler in (FabricController.on_port_desc, FabricController.on_port_status):
        dispatchers = {d for _, ds in handler.callers.items() for d in ds.dispatchers}
        assert dispatchers == {"config", "main"}, handler.__name__
