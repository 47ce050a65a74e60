"""The Mininet pieces of a fabric on this machine: the switch class (each bridge tagged with its
run, its controller target written as Open vSwitch wants it) and the controller reference
Mininet's OVSSwitch.start reads (cluster_nodes.py has their counterparts on servers)."""
from __future__ import annotations

from mininet.node import OVSSwitch

from testbed.emulation.net.netdevs import OVS_TAG

# A controller busy with a burst of events is not a dead one: OVS probes it only after this much
# silence (the watchdog watches the process itself)
INACTIVITY_PROBE_MS = 30_000


class ControllerRef:
    """What Mininet's OVSSwitch.start needs to point a bridge at our controller: a Unix socket
    (Mininet writes targets as PROTOCOL:IP:PORT; the switch class drops the port)."""
    protocol, name, port = "unix", "c0", 0
    waiting = False      # Mininet's CLI looks up every node by name and waits on it

    def __init__(self, socket: str):
        self.socket = socket

    def IP(self):
        return self.socket

    def start(self):
        pass

    def stop(self):
        pass


def switch_class(run_id: str, target: str):
    """OVSSwitch for run `run_id`, its controller at `target` (unix:PATH)."""
    class FabricSwitch(OVSSwitch):
        def bridgeOpts(self):
            # tag the bridge so `clean` finds it and nothing else
            return super().bridgeOpts() + f" external-ids:{OVS_TAG}={run_id}"

        def vsctl(self, *args, **kwargs):
            # Mininet writes controller targets as PROTOCOL:IP:PORT; a unix: target has no port
            ours = f'{target}\\" inactivity_probe={INACTIVITY_PROBE_MS}'
            return super().vsctl(*[str(a).replace(f'{target}:0\\"', ours) for a in args], **kwargs)

        @classmethod
        def batchShutdown(cls, switches, run=None):
            """Only the switches' shells end here: the bridges go in the teardown's own step
            (teardown.py), bounded and skipped while Open vSwitch is down, where Mininet's
            unbounded ovs-vsctl would wait on a dead ovs-vswitchd for ever."""
            for switch in switches:
                switch.terminate()
            return switches

    return FabricSwitch
