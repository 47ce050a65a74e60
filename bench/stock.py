"""The baseline every bench compares with: stock Mininet building the same switch, host and
link counts as a model fabric (OVSBridge, no controller, no shaping), on the same datapath."""
from __future__ import annotations

import time

from testbed.emulation.net import system


def stock_mininet(fabric) -> tuple[float, float]:
    """Build and tear down Mininet's equivalent of `fabric`: (seconds up, seconds down)."""
    from mininet.link import Link
    from mininet.log import setLogLevel
    from mininet.net import Mininet
    from mininet.node import OVSBridge
    from mininet.topo import Topo

    class Same(Topo):
        def build(self):
            names = {sw: self.addSwitch(f"b{i}", dpid=f"{fabric.switches[sw].dpid:016x}")
                     for i, sw in enumerate(fabric.switches)}
            for i, h in enumerate(fabric.hosts):
                names[h] = self.addHost(f"x{i}")
            for l in fabric.links:
                self.addLink(names[l.a], names[l.b])

    setLogLevel("error")
    dp = "user" if system.datapath() == "netdev" else "kernel"
    t0 = time.monotonic()
    net = Mininet(topo=Same(), switch=lambda name, **kw: OVSBridge(name, datapath=dp, **kw),
                  controller=None, link=Link, autoSetMacs=True, waitConnected=False)
    net.start()
    up = time.monotonic() - t0
    net.stop()
    return up, time.monotonic() - t0 - up
