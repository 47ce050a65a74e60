"""The parts of a cluster run that are not Mininet nodes (testbed/emulation/cluster/site.py): the
servers as ssh targets, the controller on TCP with mutual TLS, the watchdog that asks every
server's Open vSwitch, and the cleanup of a run's leftovers on its servers (also for `clean`)."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass

from testbed.core import sh
from testbed.core.errors import ParamError, TestbedError
from testbed.emulation.cluster import servers
from testbed.emulation.control.controller import MARKER, PROJECT, ControllerProcess
from testbed.emulation.control.watchdog import Watchdog
from testbed.emulation.hosts import RouteQueries
from testbed.emulation.net import netdevs

OF_TLS_PORT = 6653


@dataclass(frozen=True)
class Server:
    name: str
    ip: str
    ssh_base: tuple[str, ...]      # ssh and its options, up to the destination

    @classmethod
    def of(cls, name: str) -> Server:
        """One of `servers up`'s (our key and known hosts), or a real one reached as root@NAME."""
        local = servers.lookup(name)
        if local is not None:
            return cls(local["name"], local["ip"], ("ssh", "-F", servers.ssh_config()))
        out = sh.run(["getent", "ahostsv4", name], check=False).split()
        if not out:
            raise ParamError(f"--servers: no server named {name!r} (not one of `servers list`, "
                             "and the name does not resolve)")
        return cls(name, out[0], ("ssh", "-o", "BatchMode=yes"))

    @classmethod
    def recorded(cls, name: str, entry: dict) -> Server:
        return cls(name, entry["ip"], tuple(entry["ssh"]))

    @property
    def ssh_options(self) -> list[str]:
        return list(self.ssh_base[1:])

    def ssh(self, *command: str) -> list[str]:
        return [*self.ssh_base, f"root@{self.ip}", *command]

    def run(self, script: str, input: str | None = None, timeout: float = 60, check: bool = True) -> str:
        """Run a bash script on the server, as root, in its root namespace."""
        return sh.run(self.ssh("bash", "-c", shlex.quote("set -e\n" + script)), input=input,
                      timeout=timeout, check=check)


def python_module(module: str) -> str:
    """The command that runs one of the project's modules on a server (the project and its venv
    at the same path there)."""
    return f"cd {shlex.quote(str(PROJECT))} && {shlex.quote(sys.executable)} -m {module}"


def underlay_address(server_ip: str) -> str:
    """This machine's address toward `server_ip`: where the servers reach the controller."""
    route = json.loads(sh.run(["ip", "-j", "route", "get", server_ip]))[0]
    return route.get("prefsrc") or route["src"]


class ClusterController(ControllerProcess):
    """The controller on ssl:UNDERLAY:6653. Switches must present a certificate signed by the
    run's own CA (made here, its key deleted once the two certificates are signed), and the
    controller presents one signed by it: neither side talks to a stranger."""

    def __init__(self, state, fabric, routing: dict, server: Server):
        super().__init__(state, fabric, routing)
        self.listen_ip = underlay_address(server.ip)
        self.target = f"ssl:{self.listen_ip}:{OF_TLS_PORT}"
        self.pki = state.file("pki")

    def start(self) -> None:
        self.state.add("dirs", str(self.socket_dir))
        self.socket_dir.mkdir(mode=0o700)
        self._make_pki()
        self.write_spec()
        env = dict(os.environ, HPN_TESTBED_SPEC=str(self.spec_file),
                   PYTHONPATH=f"{PROJECT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
        with open(self.log_file, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", MARKER, "controller.app", self.target,
                 "--ctl-privkey", str(self.pki / "ctl.key"), "--ctl-cert", str(self.pki / "ctl.pem"),
                 "--ca-certs", str(self.pki / "ca.pem")],
                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=PROJECT, start_new_session=True)
        self.state.add_process(self.proc.pid, MARKER)

    def _make_pki(self) -> None:
        self.pki.mkdir(mode=0o700)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        d = str(self.pki)
        sh.run(["openssl", "req", "-x509", *ec, "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem",
                "-days", "7", "-subj", f"/CN=hpn-testbed {self.state.run_id} CA"])
        for who in ("ctl", "switch"):
            sh.run(["openssl", "req", *ec, "-keyout", f"{d}/{who}.key", "-out", f"{d}/{who}.csr",
                    "-subj", f"/CN=hpn-testbed {self.state.run_id} {who}"])
            sh.run(["openssl", "x509", "-req", "-in", f"{d}/{who}.csr", "-CA", f"{d}/ca.pem",
                    "-CAkey", f"{d}/ca.key", "-CAcreateserial", "-out", f"{d}/{who}.pem", "-days", "7"])
        os.remove(f"{d}/ca.key")     # nothing else is ever signed by this CA

    def tls_dir(self) -> str:
        return f"/var/run/openvswitch/hpn-testbed-{self.state.run_id}"

    def install_tls(self, servers_) -> None:
        """The switch key and certificate and the CA certificate into each server's OVS."""
        files = {name: (self.pki / name).read_text() for name in ("switch.key", "switch.pem", "ca.pem")}
        d = self.tls_dir()
        script = f"mkdir -p -m 0700 {d}\n" + "".join(
            f"cat > {d}/{name} <<'EOF'\n{text}EOF\n" for name, text in files.items()) + \
            f"ovs-vsctl --timeout=10 set-ssl {d}/switch.key {d}/switch.pem {d}/ca.pem\n"
        for server in servers_:     # on standard input: a key in argv would show in `ps`
            server.run("bash -s", input="set -e\n" + script)


class ClusterWatchdog(Watchdog):
    """The switches' own view, from every server's Open vSwitch."""

    def __init__(self, controller, bridges, target, servers_: list[Server]):
        super().__init__(controller, bridges, target)
        self.servers = servers_

    def controller_rows(self) -> list | None:
        rows = []
        for server in self.servers:
            try:
                out = server.run("ovs-vsctl --timeout=5 --format=json --columns=target,is_connected "
                                 "list Controller", timeout=10)
                rows += json.loads(out)["data"]
            except (TestbedError, ValueError, KeyError, subprocess.TimeoutExpired):
                return None    # a busy server: no news, not a loss
        return rows


def end_host_processes(server: Server, hosts: dict[str, int]) -> None:
    """End every process in the network namespaces of the run's hosts on `server` (found by the
    hosts' shells, only while each still is `mininet:NAME`), except those shells themselves."""
    if not hosts:
        return
    pairs = " ".join(f"{pid}:{shlex.quote(name)}" for name, pid in hosts.items())
    server.run(f"""ns=" "; shells=" "
for pair in {pairs}; do
  pid=${{pair%%:*}}; name=${{pair#*:}}
  if tr '\\0' ' ' < /proc/$pid/cmdline 2>/dev/null | grep -q "mininet:$name "; then
    ns="$ns$(readlink /proc/$pid/ns/net) "; shells="$shells$pid "
  fi
done
[ "$ns" = " " ] && exit 0
list() {{ for p in /proc/[0-9]*; do n=$(readlink $p/ns/net 2>/dev/null) || continue
  case "$ns" in *" $n "*) case "$shells" in *" ${{p#/proc/}} "*) ;; *) echo ${{p#/proc/}};; esac;; \
esac; done; }}
left=$(list); [ -z "$left" ] && exit 0
kill -TERM $left 2>/dev/null || true
for i in $(seq 50); do left=$(list); [ -z "$left" ] && exit 0; sleep 0.02; done
kill -KILL $left 2>/dev/null || true
""", timeout=30)


def delete_links(server: Server, names: list[str]) -> None:
    """Delete these interfaces of the server's root namespace (a veth goes with its peer)."""
    if names:     # the names on standard input: their number grows with the fabric
        server.run("while read -r n; do [ -e \"/sys/class/net/$n\" ] && echo \"link del $n\"; done "
                   "| ip -force -batch - 2>/dev/null || true", input="".join(f"{n}\n" for n in names),
                   timeout=60)


def spread(state) -> bool:
    """Is the run `state` spread over servers (recorded by ClusterSite.record)?"""
    return bool(state.data.get("servers"))


def server_names(state) -> list[str]:
    return list(state.data.get("servers") or [])


def teardown_step(state) -> list[str]:
    """The cluster's step of the teardown (run/teardown.py STEPS): what its servers hold."""
    return [cleanup(state)] if spread(state) else []


def cleanup(state) -> str:
    """Remove what the run `state` left on its servers: processes in its hosts' namespaces, its
    interfaces, the bridges tagged with its id, its TLS files. For `destroy` (and so `clean`)."""
    done = []
    for name, entry in state.data.get("servers", {}).items():
        server = Server.recorded(name, entry)
        if servers.ssh_config() in server.ssh_base and servers.lookup(name) is None:
            done.append(f"{name} (gone with its namespace server)")
            continue
        end_host_processes(server, entry["hosts"])
        delete_links(server, entry["intfs"])
        tag = f"{netdevs.OVS_TAG}={state.run_id}"
        server.run(f"""for b in $(ovs-vsctl --timeout=10 list-br); do
  ovs-vsctl --timeout=10 get Bridge $b external-ids | tr -d '"' | grep -q '{tag}' \
&& echo "-- --if-exists del-br $b"
done | xargs -r ovs-vsctl --timeout=30
if ovs-vsctl --timeout=10 get-ssl | grep -q 'hpn-testbed-{state.run_id}/'; \
then ovs-vsctl --timeout=10 del-ssl; fi
rm -rf /var/run/openvswitch/hpn-testbed-{state.run_id}""", timeout=120)
        done.append(name)
    return f"servers {', '.join(done)}" if done else ""


class AttachedRemoteHost(RouteQueries):
    """A host of a cluster run owned by another process, reached on its server by the PID that
    holds its namespace (for `trace --fabric RUN`)."""

    def __init__(self, server: Server, pid: int):
        self.server, self.pid = server, pid

    def run_script(self, script: str) -> str:
        return self.server.run(shlex.join(["nsenter", "-t", str(self.pid), "-n",
                                           "bash", "-c", "set -e\n" + script]))


def attached(state):
    """A running cluster run's hosts (name -> AttachedRemoteHost) and an appctl(switch, *args)
    that asks the Open vSwitch of the switch's server."""
    hosts, where = {}, {}
    for name, entry in state.data["servers"].items():
        server = Server.recorded(name, entry)
        hosts.update({h: AttachedRemoteHost(server, pid) for h, pid in entry["hosts"].items()})
        where.update({b: server for b in entry["bridges"]})
    return hosts, lambda switch, *args: where[switch].run(shlex.join(["ovs-appctl", *args]))
