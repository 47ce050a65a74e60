"""The fabric's hosts: Mininet hosts that own the processes they start.

Every process a host starts goes through `spawn`, which records it in the run state (PID, a
word of its command line and its start time, so `clean` ends it and never a process that
reused its PID) before the caller sees it; `exited` and `stop` act on that process only.
`route_dev` answers which port the host's kernel sends a 5-tuple on, the one question about
routing the testbed asks of hosts.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

from mininet.node import Host

from testbed.core import sh


class RouteQueries:
    """Which port a host's kernel sends a flow on (`ip -j route get`), for any host that can
    run a script (`run_script`)."""

    def run_script(self, script: str) -> str:
        raise NotImplementedError

    def route_devs(self, src_ip: str, dst_ip: str, proto: str, sports: list[int],
                   dport: int) -> list[str | None]:
        """The port the kernel sends each (src_ip, sport) -> (dst_ip, dport) flow on."""
        return self.flow_devs([(src_ip, dst_ip, proto, s, dport) for s in sports])

    def flow_devs(self, flows: list[tuple[str, str, str, int, int]]) -> list[str | None]:
        """The port of each (src_ip, dst_ip, proto, sport, dport) flow, asked in one script."""
        return route_get_devs(self.run_script(route_get_script(flows)), flows)

    def route_dev(self, src_ip: str, dst_ip: str, proto: str = "tcp", sport: int = 0,
                  dport: int = 0) -> str | None:
        if proto == "icmp":
            out = self.run_script(f"ip -j route get {dst_ip} from {src_ip} ipproto icmp")
            return (json.loads(out) or [{}])[0].get("dev")
        return self.route_devs(src_ip, dst_ip, proto, [sport], dport)[0]

    def table_nexthops(self, table: int | str = "main") -> dict[str, set[str]]:
        """Each nexthop device of a routing table with its flags (`linkdown`, `dead`, ...), from
        `ip -j` (JSON: no colour, whatever the terminal and iproute2's version; 6.15 colours
        its text in Mininet's host shells, which are ptys)."""
        routes = json.loads(self.run_script(f"ip -j route show table {table}") or "[]")
        return {hop["dev"]: set(hop.get("flags", [])) for route in routes
                for hop in route.get("nexthops", [route]) if "dev" in hop}


# After the routes, one line per Linux bond of the host: `bond NAME SLAVE=MII ...`, its slaves in
# enslavement order with their link state (nothing where the host has no bond).
BOND_LINES = ("for b in /sys/class/net/*/bonding; do [ -d \"$b\" ] || continue; d=${b%/bonding};"
              " printf 'bond %s' \"${d##*/}\"; for s in $(cat \"$b/slaves\"); do"
              " printf ' %s=%s' \"$s\" \"$(cat /sys/class/net/$s/bonding_slave/mii_status)\"; done;"
              " echo; done\n")


def route_get_script(flows: list[tuple[str, str, str, int, int]]) -> str:
    """A script asking `ip route get` for each (src_ip, dst_ip, proto, sport, dport) flow, then
    listing the host's bonds and their slaves."""
    lines = "".join(f"route get {d} from {s} ipproto {p} sport {sp} dport {dp}\n"
                    for s, d, p, sp, dp in flows)
    return f"ip -j -batch - <<'EOF'\n{lines}EOF\n" + BOND_LINES     # one process, however many flows


def route_get_devs(output: str, flows: list[tuple[str, str, str, int, int]]) -> list[str | None]:
    """The port of each flow, from the output of route_get_script. Where the route names a Linux
    bond, the port is the slave its layer3+4 hash picks among the slaves whose link is up."""
    from testbed.emulation.net.hostnet import layer34_slave
    lines = output.splitlines()
    devs = [(json.loads(l) or [{}])[0].get("dev") for l in lines if l.startswith("[")]
    bonds = {}
    for line in lines:
        if line.startswith("bond "):
            name, *slaves = line.split()[1:]
            bonds[name] = [s for s, _, mii in (x.partition("=") for x in slaves) if mii == "up"]
    return [layer34_slave(s, d, sp, dp, bonds[dev]) if bonds.get(dev) and p in ("tcp", "udp") else dev
            for dev, (s, d, p, sp, dp) in zip(devs, flows)]


def hosts_flow_devs(net, flows_by_host: dict[str, list[tuple]]) -> dict[str, list[str | None]]:
    """flow_devs for many hosts at once: one script per host, all hosts in parallel."""
    hosts = list(flows_by_host)
    outputs = sh.nodes_cmd([(net[h], route_get_script(flows_by_host[h])) for h in hosts])
    return {h: route_get_devs(out, flows_by_host[h]) for h, out in zip(hosts, outputs)}


class AttachedHost(RouteQueries):
    """A host of a run owned by another process, reached by the PID holding its namespace
    (for `trace --fabric RUN`)."""

    def __init__(self, pid: int):
        self.pid = pid

    def run_script(self, script: str) -> str:
        return sh.run(["nsenter", "-t", str(self.pid), "-n", "bash", "-c", "set -e\n" + script])


class FabricHost(RouteQueries, Host):
    """A Mininet host of one run: what it spawns is recorded in that run's state (`run_state`,
    given by the builder with the host's other parameters)."""

    def __init__(self, name: str, run_state=None, **params):
        self.run_state = run_state
        super().__init__(name, **params)

    def run_script(self, script: str) -> str:
        return sh.node_cmd(self, script)

    def spawn(self, argv: list[str] | str, marker: str, out: Path | None = None,
              **popen) -> subprocess.Popen:
        """Start `argv` in this host's namespace, recorded in the run state.

        `marker` must occur in the command line (it identifies the process to `clean`); `out`
        takes its stdout and stderr (default: discarded unless `popen` says otherwise)."""
        argv = shlex.split(argv) if isinstance(argv, str) else list(argv)
        if marker not in " ".join(argv):
            raise ValueError(f"marker {marker!r} is not in the command line {argv}")
        if out is not None:
            with open(out, "wb") as f:   # the child keeps its own copy of the descriptor
                proc = self.popen(argv, stdout=f, stderr=subprocess.STDOUT, **popen)
        else:
            popen.setdefault("stdout", subprocess.DEVNULL)
            popen.setdefault("stderr", subprocess.DEVNULL)
            proc = self.popen(argv, **popen)
        # `mnexec -da` execs the command in place (it only forks when already a group leader),
        # so proc.pid is the command itself
        self.run_state.add_process(proc.pid, marker)
        return proc

    @staticmethod
    def exited(proc: subprocess.Popen) -> bool:
        return proc.poll() is not None

    def stop(self, proc: subprocess.Popen, marker: str) -> None:
        """End a process this host spawned, if it is still that process."""
        from testbed.emulation.run.processes import kill_pid
        if proc.poll() is None:
            kill_pid(proc.pid, marker)
        proc.wait()


def end_unrecorded(net, recorded: set[int]) -> None:
    """End every process in a host's network namespace that the run did not record: typed at
    the CLI (`p0s0h0 iperf3 -s &`), or spawned in the instant a signal cut short before it was
    recorded. Mininet ends only each shell's process group, and such a process would keep its
    host's namespace alive. Only our own hosts' namespaces are searched."""
    from testbed.emulation.run import processes
    namespaces = {_netns(host.pid) for host in net.hosts} - {None}
    recorded = recorded | {os.getpid()}
    strays = [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc")))
              if pid not in recorded and _netns(pid) in namespaces]
    processes.kill_all([(pid, "", processes.start_time(pid)) for pid in strays], grace=1.0)


def _netns(pid: int) -> tuple[int, int] | None:
    try:
        st = os.stat(f"/proc/{pid}/ns/net")
    except OSError:    # gone already
        return None
    return st.st_dev, st.st_ino
