"""Local "servers" for trying a fabric on several machines with one: `hpn-testbed servers up N`.

Each server is a set of fresh namespaces (network, mount, PID, UTS) whose PID 1 is a small
script (server_files.init_script): its own hostname, its own Open vSwitch (ovsdb-server and
ovs-vswitchd started directly on a private database and run directory, userspace datapath) and
its own sshd, which takes only our generated key, as root. The servers share an underlay: a
bridge in a network namespace of its own (so no firewall of the machine filters it) with a
veth to every server and one to the machine, in 198.18.77.0/24 (RFC 2544's benchmarking range,
which no real network routes). Names carry the `hpnsv` prefix (servers are hpn-srv1, ...).

Everything lives in STATE_DIR (mode 0700): the record (servers.json, written before anything
is made), the client key, known host keys, ssh configuration and each server's files. `servers
down` removes exactly what the record lists: it ends the recorded processes (the namespaces'
processes die with their PID 1), deletes the underlay namespace and the machine-side veth, and
the directory. The machine's own Open vSwitch is never addressed: each server mounts its own
run directory over /run/openvswitch, so its ovs-vsctl cannot even reach the machine's.
STATE_DIR is under the machine's run root whatever HPN_RUN_DIR says: the names it records (the
underlay namespace, the machine-side veth) are machine-wide, like the one-fabric lock, so a
second record under another root could only collide with the first.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from testbed.core import files, sh
from testbed.core.errors import ParamError, TestbedError
from testbed.core.wait import wait_for
from testbed.emulation.cluster import server_files
from testbed.emulation.net import netdevs
from testbed.emulation.run import processes, runstate

STATE_DIR = runstate.MACHINE_ROOT / "servers"
SUBNET, PREFIX = "198.18.77", 24
MACHINE_IP = f"{SUBNET}.254"        # the machine's end of the underlay (where the controller listens)
UNDERLAY_NS = "hpnsv-underlay"
MACHINE_INTF = "hpnsv-host"
MAX_SERVERS = 16
INIT_MARKER = "server-init.sh"


def server_name(k: int) -> str:
    return f"hpn-srv{k}"


def record_file() -> Path:
    return STATE_DIR / "servers.json"


def load() -> dict | None:
    """The record of the servers that are up (or half up), or None; ParamError (one line) if
    it cannot be read or is not such a record (bounded, regular file: testbed/core/files.py)."""
    if not os.path.lexists(record_file()):
        return None
    record = files.load_json(record_file(), "servers state", files.STATE_MAX)
    problem = _malformed(record)
    if problem:
        raise ParamError(f"servers state {files.shown(record_file())}: {problem}; "
                         f"remove what it lists by hand, then {STATE_DIR}")
    return record


def _malformed(record) -> str | None:
    if not isinstance(record, dict):
        return "not an object"
    for key in ("servers", "pids", "netns", "intfs", "made_dirs"):
        if not isinstance(record.get(key), list):
            return f"{key} is not a list"
    for s in record["servers"]:
        if not (isinstance(s, dict) and all(isinstance(s.get(k), str) for k in ("name", "ip", "dir"))
                and isinstance(s.get("pid"), int)):
            return "a server is not {name, ip, pid, dir}"
    if not all(isinstance(p, list) and len(p) == 3 and isinstance(p[0], int) and isinstance(p[1], str)
               for p in record["pids"]):
        return "pids are not [pid, marker, start time]"
    if not all(isinstance(x, str) for k in ("netns", "intfs", "made_dirs") for x in record[k]):
        return "netns, intfs and made_dirs are not names"
    return None


def _save(record: dict) -> None:
    files.write_json(STATE_DIR, record_file().name, record, indent=1)


def ssh_config() -> str:
    return str(STATE_DIR / "ssh_config")


def ssh_argv(server: str, *command: str) -> list[str]:
    """ssh to one of our servers as root with our key and known host keys."""
    return ["ssh", "-F", ssh_config(), server, *command]


def lookup(name: str) -> dict | None:
    """One of our servers by name or underlay address (None: not one of ours)."""
    record = load() or {"servers": []}
    return next((s for s in record["servers"] if name in (s["name"], s["ip"])), None)


# ---- up ----
def up(n: int) -> dict:
    """Start n servers; on any failure remove what was made. Returns the record."""
    if os.geteuid() != 0:
        raise ParamError("servers up needs root (namespaces, veths)")
    if not 1 <= n <= MAX_SERVERS:
        raise ParamError(f"servers up {n}: choose 1..{MAX_SERVERS}")
    _install_tools()
    if load() is not None:
        raise ParamError("servers are already up (`hpn-testbed servers list`); `servers down` first")
    _refuse_clashes()
    runstate.ROOT.mkdir(mode=0o755, parents=True, exist_ok=True)
    STATE_DIR.mkdir(mode=0o700)
    record = {"servers": [], "pids": [], "netns": [], "intfs": [], "made_dirs": []}
    _save(record)
    try:
        _make(record, n)
    except BaseException:
        down()
        raise
    return record


TOOLS = ("sshd", "ssh", "ssh-keygen", "unshare", "ovsdb-server", "ovs-vswitchd", "sudo")
INSTALL_SH = Path(__file__).resolve().parents[3] / "scripts" / "install.sh"


def _missing_tools() -> list[str]:
    return [t for t in TOOLS if shutil.which(t) is None and not os.path.exists(f"/usr/sbin/{t}")]


def _install_tools() -> None:
    """The multi-server mode's packages (openssh-server, openssh-client, sudo) are not part of
    `make setup`: installing openssh-server starts a system sshd on port 22. They are installed
    here, on first use, by `scripts/install.sh --servers`, which starts and enables no service."""
    if not _missing_tools():
        return
    if not INSTALL_SH.is_file():
        raise ParamError(f"{', '.join(_missing_tools())} missing: install openssh-server openssh-client sudo "
                         "(apt-get install --no-install-recommends), then disable the ssh service")
    # stderr: `servers up --json` keeps its stdout for the JSON
    print(f"servers: installing the multi-server mode's packages ({INSTALL_SH} --servers)", file=sys.stderr,
          flush=True)
    proc = subprocess.run(["bash", str(INSTALL_SH), "--servers"], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, check=False, timeout=1800)
    if proc.returncode != 0 or _missing_tools():
        lines = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ParamError(f"could not install what `servers up` needs ({', '.join(_missing_tools())} "
                         f"missing): {lines[0]}; run `sudo {INSTALL_SH} --servers`")


def _refuse_clashes() -> None:
    if os.path.exists(f"/sys/class/net/{MACHINE_INTF}") or os.path.exists(f"/run/netns/{UNDERLAY_NS}"):
        raise ParamError(f"{MACHINE_INTF} or netns {UNDERLAY_NS} exists but no servers are recorded: "
                         "remove them by hand (`ip link del`, `ip netns del`)")
    routes = json.loads(sh.run(["ip", "-j", "route", "show", "match", f"{SUBNET}.1"]) or "[]")
    if any(r.get("dst") != "default" for r in routes):
        raise ParamError(f"{SUBNET}.0/{PREFIX} is already routed on this machine: the underlay would clash")


def _make(record: dict, n: int) -> None:
    servers = [{"name": server_name(k), "ip": f"{SUBNET}.{k}", "dir": str(STATE_DIR / server_name(k))}
               for k in range(1, n + 1)]
    key = STATE_DIR / "id_ed25519"
    sh.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "hpn-testbed-servers", "-f", str(key)])
    (STATE_DIR / "authorized_keys").write_text(Path(f"{key}.pub").read_text())
    (STATE_DIR / "control").mkdir(mode=0o700)
    known = ""
    for s in servers:
        sdir = Path(s["dir"])
        sdir.mkdir(mode=0o700)
        (sdir / "home").mkdir(mode=0o700)
        sh.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(sdir / "host_ed25519_key")])
        known += server_files.known_hosts_line(s, (sdir / "host_ed25519_key.pub").read_text())
        (sdir / "sshd_config").write_text(server_files.sshd_config(s["ip"], str(sdir),
                                                                   str(STATE_DIR / "authorized_keys")))
        (sdir / "hosts").write_text(server_files.hosts_file(servers, MACHINE_IP))
        (sdir / INIT_MARKER).write_text(server_files.init_script(s["name"], s["ip"], PREFIX, str(sdir)))
    (STATE_DIR / "known_hosts").write_text(known)
    Path(ssh_config()).write_text(server_files.ssh_config(servers, str(key), str(STATE_DIR / "known_hosts"),
                                                          str(STATE_DIR / "control")))
    if not os.path.isdir("/run/sshd"):     # sshd insists on it; each server mounts its own over it
        record["made_dirs"].append("/run/sshd")
        _save(record)
        os.mkdir("/run/sshd", 0o755)
    _make_underlay(record)
    for s in servers:
        _start_server(record, s)
    for s in servers:
        wait_for(f"sshd on {s['name']} to take our key", lambda s=s: _answers(s), 20, 0.05)
        _start_master(record, s)


def _start_master(record: dict, s: dict) -> None:
    """One ssh connection per server that every other ssh to it shares (ssh_config: ControlMaster
    no). Owned by the servers, not by whichever command came first: a short command that became
    the master would not return while a node's shell still used it, and its timeout would kill
    every shell on the server."""
    with open(Path(s["dir"], "ssh-master.log"), "wb") as log:
        proc = subprocess.Popen(["ssh", "-F", ssh_config(), "-M", "-N", "-o", "ControlMaster=yes", s["name"]],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                                start_new_session=True)
    record["pids"].append([proc.pid, "ssh", processes.start_time(proc.pid)])
    _save(record)

    def ready() -> bool:
        if proc.poll() is not None:
            log = Path(s["dir"], "ssh-master.log").read_text()[-2000:]
            raise TestbedError(f"the ssh connection to {s['name']} ended while starting:\n{log}")
        return sh.ok(["ssh", "-F", ssh_config(), "-O", "check", s["name"]], timeout=10)
    wait_for(f"the shared ssh connection to {s['name']}", ready, 20, 0.05)


def _make_underlay(record: dict) -> None:
    mtu = server_files.UNDERLAY_MTU
    record["netns"].append(UNDERLAY_NS)
    record["intfs"].append(MACHINE_INTF)
    _save(record)
    sh.run(["ip", "netns", "add", UNDERLAY_NS])
    sh.run(["ip", "-batch", "-"], input="\n".join([
        f"link add {MACHINE_INTF} mtu {mtu} type veth peer name machine mtu {mtu} netns {UNDERLAY_NS}",
        f"addr add {MACHINE_IP}/{PREFIX} dev {MACHINE_INTF}",
        f"link set {MACHINE_INTF} up"]) + "\n")
    sh.run(["ip", "-n", UNDERLAY_NS, "-batch", "-"], input="\n".join([
        f"link add br0 mtu {mtu} type bridge", "link set br0 up", "link set lo up",
        "link set machine master br0 up"]) + "\n")


def _start_server(record: dict, s: dict) -> None:
    sdir = Path(s["dir"])
    with open(sdir / "init.log", "wb") as log:
        proc = subprocess.Popen(
            ["unshare", "--net", "--mount", "--pid", "--uts", "--fork", "--kill-child=SIGKILL",
             "--mount-proc", "--propagation", "private", "bash", str(sdir / INIT_MARKER)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    record["pids"].append([proc.pid, "unshare", processes.start_time(proc.pid)])
    _save(record)
    init = wait_for(f"{s['name']}'s namespaces", lambda: _child(proc.pid), 10, 0.01)
    s["pid"] = init
    record["pids"].append([init, INIT_MARKER, processes.start_time(init)])
    record["servers"].append(s)
    _save(record)
    mtu = server_files.UNDERLAY_MTU
    port = f"{s['name'].removeprefix('hpn-srv')}"   # the server's port on the underlay bridge
    sh.run(["ip", "-n", UNDERLAY_NS, "-batch", "-"], input="\n".join([
        f"link add s{port} mtu {mtu} type veth peer name u0 mtu {mtu} netns {init}",
        f"link set s{port} master br0 up"]) + "\n")


def _child(pid: int) -> int | None:
    """The first child of `pid` (unshare's fork: PID 1 of the new namespaces)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        raise TestbedError(f"unshare (pid {pid}) exited before making its namespaces") from None
    return int(children[0]) if children else None


def _answers(s: dict) -> bool:
    if not processes.owns(s["pid"], INIT_MARKER):
        log = Path(s["dir"], "init.log").read_text()[-2000:]
        raise TestbedError(f"server {s['name']} exited while starting; its log:\n{log}")
    out = subprocess.run(["ssh", "-F", ssh_config(), "-o", "ConnectTimeout=2", s["name"], "hostname"],
                         check=False, capture_output=True, text=True, timeout=10)
    return out.returncode == 0 and out.stdout.strip() == s["name"]


# ---- state of the servers ----
def status() -> list[dict]:
    """Each server with whether its PID 1, Open vSwitch and sshd answer (asked over ssh)."""
    record = load()
    if record is None:
        return []
    rows = []
    for s in record["servers"]:
        alive = processes.owns(s["pid"], INIT_MARKER)
        ovs = alive and sh.ok(ssh_argv(s["name"], "ovs-vsctl", "--timeout=3", "show"), timeout=10)
        rows.append({**{k: s[k] for k in ("name", "ip", "pid")}, "running": alive, "ovs": ovs,
                     "ssh": ovs or (alive and _answers(s))})
    return rows


# ---- down ----
def down() -> list[str]:
    """Remove exactly what the record lists. Returns what was removed."""
    record = load()
    if record is None:
        return []
    done = []
    # unshare's death SIGKILLs PID 1 (--kill-child), which takes the namespace's processes
    ended = processes.kill_all([tuple(p) for p in record["pids"]], grace=3.0)
    done += [f"process {pid}" for pid in ended]
    inits = [p for p in record["pids"] if p[1] == INIT_MARKER]
    wait_for("the servers' namespaces to end", lambda: not any(processes.owns(*p) for p in inits), 10, 0.02)
    for ns in record["netns"]:
        if os.path.exists(f"/run/netns/{ns}") and sh.ok(["ip", "netns", "del", ns]):
            done.append(f"netns {ns}")
    if netdevs.delete_links(record["intfs"]):
        done.append(f"interfaces {', '.join(record['intfs'])}")
    for path in record["made_dirs"]:
        try:
            os.rmdir(path)
            done.append(f"directory {path}")
        except OSError:
            pass   # gone, or something else uses it now: leave it
    shutil.rmtree(STATE_DIR, ignore_errors=True)
    done.append(f"directory {STATE_DIR}")
    return done
