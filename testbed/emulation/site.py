"""Where a fabric runs: the object an Emulation is given, which owns everything that depends on
the place (this module: this machine; cluster.py: servers).

A site chooses the datapath and makes the controller; records in the run state what it will
create; gives build_network its Mininet classes and each node's options; runs commands where a
switch lives (a script in its root namespace, ovs-ofctl, ovs-appctl, one batch per machine);
sends frames from hosts' ports; samples and reads the switches' port counters; and, at the
end, ends stray processes and deletes the fabric's links in one batch per machine. Faults,
traces and meters go through `emu.site`, never straight to this machine.
"""
from __future__ import annotations

import os
import sys
from typing import Protocol, runtime_checkable

from testbed.core import sh
from testbed.core.errors import ParamError
from testbed.emulation import cpu_precedence, nodes
from testbed.emulation.control.controller import ControllerProcess
from testbed.emulation.control.watchdog import Watchdog
from testbed.emulation.hosts import FabricHost, end_unrecorded
from testbed.emulation.net import counters, links, netdevs, ovsdaemons, rcu, sendbuf, system
from testbed.model.fabric import Fabric


@runtime_checkable
class Site(Protocol):
    """What an Emulation asks of the place it runs (LocalSite here, cluster.site.ClusterSite
    across servers); tests/unit/test_site.py checks that both give every member, alike."""
    host_class: type            # Mininet classes for the fabric's hosts and cables
    link_class: type
    node_workers: int           # Mininet nodes started at once

    # before anything exists (ParamError: nothing was created)
    def datapath(self, asked: str | None) -> str: ...
    def mtu(self, asked: int | None) -> int: ...
    def make_controller(self, state, routing: dict, app=None): ...
    def root_intfs(self) -> list[str]: ...
    def preflight(self) -> None: ...
    def record(self, state) -> None: ...                       # written down before it is made

    # building
    def switch_class(self, run_id: str, controller): ...
    def switch_options(self, switch: str, datapath: str) -> dict: ...
    def host_options(self, host: str) -> dict: ...
    def controller_ref(self, controller): ...
    def record_nodes(self, net, state) -> None: ...
    def make_links(self, built, host_pids: dict[str, int], mtu: int) -> None: ...
    def built(self, net, controller) -> None: ...
    def make_watchdog(self, controller): ...
    def when_ready(self, state, datapath: str, queue_bytes: int) -> int | None: ...

    # a running fabric: commands where a switch lives, frames, meters
    def switch_run(self, switch: str, script: str, input: str | None = None,
                   timeout: float = 60) -> str: ...
    def switches_batch(self, command: str, lines: dict[str, list[str]]) -> None: ...
    def ofctl(self, command: str, switch: str, *args: str) -> str: ...
    def appctl(self, switch: str, *args: str) -> str: ...
    def send_frames(self, lines: list[str]) -> None: ...
    def carrier_follows(self, link) -> bool: ...
    def sampler(self, intfs, interval: float = 0.05, counter: str = "tx_bytes", queues: bool = True): ...
    def counters(self, intfs, names=("tx_bytes",)) -> dict[str, tuple[int, ...]]: ...
    def describe(self, net) -> dict: ...

    # the end
    def end_strays(self, net, state) -> None: ...
    def before_bridges_go(self, state) -> None: ...
    def remove_links(self, state) -> None: ...


class LocalSite:
    """This machine: switches are bridges of its Open vSwitch, their ports veth ends in its root
    namespace, hosts network namespaces of its own."""
    host_class, link_class = FabricHost, links.BatchedLink
    node_workers = 8        # Mininet nodes started at once (nodestart.py)

    def __init__(self, fabric: Fabric):
        self.fabric = fabric
        self.daemons: dict[str, list] = {}      # Open vSwitch's daemons at the run's start

    # ---- before anything exists ----
    def datapath(self, asked: str | None) -> str:
        return asked or system.datapath()

    def mtu(self, asked: int | None) -> int:
        """Every cable's and host port's MTU: `asked`, else HPN_MTU, else the default (one line,
        ParamError, before anything exists, when out of range)."""
        value = asked or system.mtu()
        system.check_mtu(value)
        return value

    def make_controller(self, state, routing: dict, app=None) -> ControllerProcess:
        return ControllerProcess(state, self.fabric, routing, app)

    def root_intfs(self) -> list[str]:
        """The interfaces this run makes in this machine's root namespace (the switches' ends)."""
        return [l.b_intf for l in self.fabric.links] + [l.a_intf for l in self.fabric.switch_links()]

    def preflight(self) -> None:
        taken = (set(self.root_intfs()) | set(self.fabric.switches)) & \
            (set(os.listdir("/sys/class/net")) | netdevs.all_bridges())
        if taken:
            raise ParamError(f"{len(taken)} names this fabric needs already exist (e.g. "
                             f"{min(taken)}): another run is up, or run `hpn-testbed clean`")

    def record(self, state) -> None:
        """Write down, before they exist, the bridges and interfaces this run will make, and
        which Open vSwitch daemons it starts on (PID and start time: the watchdog's)."""
        self.daemons = ovsdaemons.record()
        state.data["about"]["ovs_daemons"] = self.daemons
        state.add("bridges", *self.fabric.switches)
        state.add("root_intfs", *self.root_intfs())

    # ---- what build_network asks ----
    def switch_class(self, run_id: str, controller):
        return nodes.switch_class(run_id, controller.target)

    def switch_options(self, switch: str, datapath: str) -> dict:
        return {"datapath": "user" if datapath == "netdev" else "kernel", "batch": True}

    def host_options(self, host: str) -> dict:
        return {}

    def controller_ref(self, controller) -> nodes.ControllerRef:
        return nodes.ControllerRef(str(controller.socket))

    def record_nodes(self, net, state) -> None:
        """The nodes' shells, as soon as they exist (and the hosts' PIDs for `trace --fabric RUN`),
        and from now on the run's processes first in line for the CPU (cpu_precedence.py)."""
        cpu_precedence.apply(state)
        state.add_processes(*[(n.pid, "mininet:") for n in net.hosts + net.switches])
        state.data["hosts"] = {h.name: h.pid for h in net.hosts}
        state.save()

    def make_links(self, built, host_pids: dict[str, int], mtu: int) -> None:
        """Every veth pair of the fabric in one kernel batch (links.py), before Mininet records
        them as links of `link_class`."""
        links.make_veths(self.fabric, built, host_pids, mtu)

    def built(self, net, controller) -> None:
        """After Mininet's build, before its start: nothing more here."""

    def make_watchdog(self, controller) -> Watchdog:
        return Watchdog(controller, list(self.fabric.switches), controller.target, self.daemons)

    # ---- the switches' side, where they live ----
    def switch_run(self, switch: str, script: str, input: str | None = None, timeout: float = 60) -> str:
        """Run a bash script in the root namespace that holds `switch` and its ports."""
        return sh.run(["bash", "-c", "set -e\n" + script], input=input, timeout=timeout)

    def switches_batch(self, command: str, lines: dict[str, list[str]]) -> None:
        """Feed each switch's `lines` to `command` (`ip -batch -`), one process per machine."""
        sh.run(command, input="".join(line + "\n" for ls in lines.values() for line in ls))

    def ofctl(self, command: str, switch: str, *args: str) -> str:
        return sh.run(["ovs-ofctl", "-O", "OpenFlow15", command, switch, *args])

    def appctl(self, switch: str, *args: str) -> str:
        """ovs-appctl on the Open vSwitch that runs `switch`."""
        return sh.run(["ovs-appctl", *args])

    def send_frames(self, lines: list[str]) -> None:
        """Send `PID PORT HEXFRAME` lines' frames from hosts' ports, all from one process."""
        sh.run([sys.executable, "-m", "testbed.inhost.frames"], input="\n".join(lines) + "\n",
               timeout=120)

    def carrier_follows(self, link) -> bool:
        """Does one end of `link` losing carrier take the other end down too? (a veth: yes)"""
        return True

    def sampler(self, intfs, interval: float = 0.05, counter: str = "tx_bytes", queues: bool = True):
        """A counters.Sampler over switch-side interfaces (a context manager)."""
        return counters.Sampler(list(intfs), interval, counter=counter, queues=queues)

    def counters(self, intfs, names=("tx_bytes",)) -> dict[str, tuple[int, ...]]:
        """Switch-side interfaces' statistics counters `names`, in that order."""
        return counters.read(intfs, names)

    def describe(self, net) -> dict:
        return {}

    def when_ready(self, state, datapath: str, queue_bytes: int) -> int | None:
        """On the userspace datapath, Open vSwitch's one send buffer raised to what the switch
        ports' queues hold (sendbuf.py; recorded in `state`, put back by the teardown): its
        size, or None where nothing changed."""
        if datapath != "netdev":
            return None
        return sendbuf.raise_to(state, sendbuf.wanted(len(self.root_intfs()), queue_bytes))

    # ---- teardown ----
    def end_strays(self, net, state) -> None:
        """End the processes in the hosts' namespaces that the run did not record."""
        end_unrecorded(net, {pid for pid, *_ in state.data["pids"]})

    def before_bridges_go(self, state) -> None:
        """RCU grace periods expedited for the removal of this machine's bridges (rcu.py): a
        setting of the whole machine, recorded in `state` and put back by teardown's last step."""
        rcu.expedite(state)

    def remove_links(self, state) -> None:
        """The fabric's links in one kernel batch (instead of Mininet's round trip per link),
        with the bridges' own tap devices on the userspace datapath (netdevs.delete_bridges)."""
        netdevs.delete_links(self.root_intfs() + netdevs.bridge_taps(self.fabric.switches))
