"""What a run created, written down before it is created, so `clean` can remove exactly that.

Each run has a directory under /run/hpn-testbed/RUN (mode 0700) holding state.json: the
processes it started (PID, a word the command line must contain and the start time, so a
reused PID is never killed), the OVS
bridges (also tagged external-ids:hpn-testbed=RUN), the interfaces in the root namespace and the
nftables tables it made. Nothing outside those lists is ever touched. The run's own files
(controller spec, status and log, iperf3 output, probe logs) live in the same directory.

The run root may be moved with HPN_RUN_DIR (tests do), but the machine-wide facts do not move
with it: the one-fabric lock is always MACHINE_ROOT/lock, and `clean`'s census of stray tagged
bridges spares the bridges of the run that holds that lock, whatever root it records itself
under (a stray is a tagged bridge of no live run). state.json is written atomically
(testbed/core/files.py) and read bounded; one that cannot be read is reported, not fatal.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path

from testbed.core import files, sh
from testbed.core.errors import ParamError, TestbedError

MACHINE_ROOT = Path("/run/hpn-testbed")      # the machine's run root: where the lock always is
ROOT = Path(os.environ.get("HPN_RUN_DIR") or MACHINE_ROOT)
LOCK_FILE = MACHINE_ROOT / "lock"
OVS_TAG = "hpn-testbed"
LISTS = ("pids", "bridges", "root_intfs", "nft_tables", "dirs")


class RunState:
    def __init__(self, run_id: str):
        self.run_id = run_id
        self.dir = ROOT / run_id
        self._lock = threading.Lock()
        self.data = {"owner": [os.getpid(), start_time(os.getpid())], "pids": [], "bridges": [],
                     "root_intfs": [], "nft_tables": [], "dirs": [], "created": time.time(),
                     "about": {}}

    def create(self) -> RunState:
        ROOT.mkdir(mode=0o755, parents=True, exist_ok=True)
        self.dir.mkdir(mode=0o700, exist_ok=False)
        self.save()
        return self

    def file(self, name: str) -> Path:
        """A run-time file of this run: inside its private directory, removed with it."""
        return self.dir / name

    def add_process(self, pid: int, marker: str) -> None:
        self.add_processes((pid, marker))

    def add_processes(self, *pairs: tuple[int, str]) -> None:
        self.add("pids", *[[pid, marker, start_time(pid)] for pid, marker in pairs])

    def live_processes(self) -> list[tuple[int, str]]:
        """The recorded processes that still run (the same processes, not reused PIDs)."""
        return [(pid, marker) for pid, marker, started in self.data["pids"]
                if _owns(pid, marker, started)]

    def save(self) -> None:
        files.write_json(self.dir, "state.json", self.data)    # atomic: `clean` never sees half

    def add(self, key: str, *items) -> None:
        with self._lock:   # collectives spawn their agents from several threads
            self.data[key].extend(items)
            self.save()

    @classmethod
    def load(cls, path: Path) -> RunState:
        """The state recorded in `path`; ParamError (one line) if it is unreadable or malformed."""
        data = files.load_json(path / "state.json", "run state", files.STATE_MAX)
        problem = _malformed(data)
        if problem:
            raise ParamError(f"run state {files.shown(path / 'state.json')}: {problem}")
        state = cls(path.name)
        state.data.update(data)
        return state


def _malformed(data) -> str | None:
    """What is wrong with a state.json's shape, or None (only what the testbed reads is checked)."""
    if not isinstance(data, dict):
        return "not an object"
    owner = data.get("owner")
    if not (isinstance(owner, list) and len(owner) == 2 and all(_int_or_none(x) for x in owner)
            and isinstance(owner[0], int)):
        return "owner is not [pid, start time]"
    for key in LISTS:
        if not isinstance(data.get(key, []), list):
            return f"{key} is not a list"
    if not all(isinstance(p, list) and len(p) == 3 and isinstance(p[0], int) and isinstance(p[1], str)
               and _int_or_none(p[2]) for p in data.get("pids", [])):
        return "pids are not [pid, marker, start time]"
    for key in LISTS[1:]:
        if not all(isinstance(x, str) for x in data.get(key, [])):
            return f"{key} are not names"
    hosts = data.get("hosts", {})
    if not (isinstance(hosts, dict) and all(isinstance(v, int) and not isinstance(v, bool) for v in hosts.values())):
        return "hosts is not {name: pid}"
    return None


def _int_or_none(x) -> bool:
    return x is None or (isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**63)


class RunLock:
    """The machine's one-fabric lock: an exclusive flock on LOCK_FILE (never moved by
    HPN_RUN_DIR), held by the process that owns the running fabric until its teardown is done.
    The kernel drops it when that process dies, so a killed run never blocks the next (its
    leftovers are `clean`'s). Within one process it nests: `run` holds it for all its scenarios,
    each scenario's Emulation takes it again. The file says which run holds it."""

    _fd: int | None = None       # this process's hold, and how many takers share it
    _count = 0

    @classmethod
    def take(cls, run_id: str) -> RunLock:
        if cls._fd is not None:
            cls._count += 1
            _write_holder(cls._fd, run_id)
            return cls()
        fd = _open_lock()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise ParamError(f"another fabric is up on this machine: {holder or 'starting'}; one "
                             "fabric at a time (stop it, or `hpn-testbed clean` if it is gone)") from None
        _write_holder(fd, run_id)
        cls._fd, cls._count = fd, 1
        return cls()

    def release(self) -> None:
        cls = type(self)
        cls._count -= 1
        if cls._count == 0 and cls._fd is not None:
            os.close(cls._fd)   # closing the descriptor drops the flock
            cls._fd = None

    @classmethod
    def holder(cls) -> str | None:
        """The run holding the lock in another process ("RUN (pid N)"), or None if it is free."""
        fd = _open_lock()
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder(fd) or "a run starting"
        finally:
            os.close(fd)
        return None


def _open_lock() -> int:
    LOCK_FILE.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    try:
        return os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as e:
        raise ParamError(f"the one-fabric lock {files.shown(LOCK_FILE)}: {e.strerror}") from None


def _write_holder(fd: int, run_id: str) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{run_id} {os.getpid()}\n".encode(), 0)


def _holder(fd: int) -> str:
    words = os.pread(fd, 256, 0).decode(errors="replace").split()
    return f"{words[0]} (pid {words[1]})" if len(words) == 2 else ""


def held_run() -> str | None:
    """The run id written in the lock while another process holds it (None: free or unnamed)."""
    holder = RunLock.holder()
    return holder.split()[0] if holder and "(pid" in holder else None


def start_time(pid: int) -> int | None:
    """When `pid` started (clock ticks since boot, /proc/PID/stat field 22): with the PID, an
    identity no later process can take over."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])   # the command name may hold spaces


def _owns(pid: int, marker: str, started: int | None = None) -> bool:
    """Is `pid` still the process we recorded: the same start time, `marker` in its command line?"""
    try:
        if marker.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return False
    except OSError:
        return False
    return started is None or start_time(pid) == started


def kill_pid(pid: int, marker: str, grace: float = 3.0, started: int | None = None) -> None:
    """End `pid` if it is still the process we started (its command line holds `marker`; and,
    when `started` is given, it started then)."""
    kill_all([(pid, marker, start_time(pid) if started is None else started)], grace)


def kill_all(procs: list[tuple[int, str, int | None]], grace: float = 3.0) -> list[int]:
    """End every (pid, marker, start time) that is still the process we recorded: SIGTERM to
    all, one grace period for all, then SIGKILL to those left (an interactive shell ignores
    SIGTERM). A stopped process (SIGSTOP) is continued after its SIGTERM, so it ends at once
    instead of after the grace period. Returns the PIDs it signalled."""
    ours = [p for p in procs if _owns(*p)]
    for pid, _, _ in ours:
        _signal(pid, signal.SIGTERM)
        _signal(pid, signal.SIGCONT)
    deadline = time.monotonic() + grace
    left = ours
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = [p for p in left if _owns(*p)]
    for pid, marker, started in left:
        if _owns(pid, marker, started):
            _signal(pid, signal.SIGKILL)
    return [pid for pid, _, _ in ours]


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def destroy(state: RunState) -> list[str]:
    """Remove everything `state` lists. Returns what was removed, for the user. A step that
    fails does not stop the others; the run state then stays, for `clean` to try again, and
    TestbedError says what is left."""
    done, failed = [], []

    def step(what: str, action) -> None:
        try:
            result = action()
        except (TestbedError, OSError) as e:
            failed.append(f"{what}: {str(e).splitlines()[0]}")
            return
        if result:
            done.append(result)

    if state.data.get("servers"):   # a run across servers (testbed/emulation/cluster.py): first,
        from testbed.emulation import cluster_parts  # while the hosts' shells still hold their namespaces
        step("servers", lambda: cluster_parts.cleanup(state))
    done += [f"process {pid}" for pid in kill_all([tuple(p) for p in reversed(state.data["pids"])])]
    step("bridges", lambda: _delete_bridges(tagged_bridges(state.run_id)
                                            | (set(state.data["bridges"]) & all_bridges()),
                                            len(state.data["root_intfs"])))
    step("interfaces", lambda: f"{n} interfaces" if (n := delete_links(state.data["root_intfs"])) else "")
    for table in state.data["nft_tables"]:
        step(f"nft table {table}", lambda table=table: f"nft table {table}"
             if sh.ok(["nft", "delete", "table", *table.split()]) else "")
    for path in state.data.get("dirs", []):
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
            done.append(f"directory {path}")
    if failed:
        raise TestbedError(f"teardown of {state.run_id} incomplete ({'; '.join(failed)}): "
                           "run `hpn-testbed clean`")
    shutil.rmtree(state.dir, ignore_errors=True)
    return done


def _delete_bridges(bridges: set[str], ports: int) -> str:
    """One ovs-vsctl for all of them; OVS takes ~0.1 s a bridge and more with many ports."""
    if not bridges:
        return ""
    timeout = max(30, int(0.05 * ports) + 5 * len(bridges))
    sh.run(["ovs-vsctl", f"--timeout={timeout}"] + [a for b in sorted(bridges)
                                                     for a in ("--", "--if-exists", "del-br", b)],
           timeout=timeout + 10)
    return f"{len(bridges)} bridges"


def delete_links(names: list[str]) -> int:
    """Delete these root-namespace interfaces (a veth goes with its peer) in one kernel batch.

    One `ip link del` per link waits out the kernel's RCU grace periods each time (~15 ms a
    link); the members of a link group go in one batch. The group is a number no interface
    carries yet, and only `names` are put in it, so nothing else can go with them.
    Returns how many of `names` existed."""
    existing = set(os.listdir("/sys/class/net"))
    names = [n for n in names if n in existing]
    if not names:
        return 0
    group = _unused_link_group()
    # -force: go on past names that vanish meanwhile (the peer of one deleted before)
    sh.run("ip -force -batch - 2>/dev/null || true", check=False,
           input="".join(f"link set dev {n} group {group}\n" for n in names))
    if _link_group(group) <= set(names):
        sh.run(["ip", "link", "del", "group", str(group)], check=False)
    # whatever is left (a foreign interface joined the group, or no group delete): one by one
    left = [n for n in names if os.path.exists(f"/sys/class/net/{n}")]
    if left:
        sh.run("ip -force -batch - 2>/dev/null || true", check=False,
               input="".join(f"link del {n}\n" for n in left))
    return len(names)


_GROUP_BASE = 0x48504E00   # "HPN": far from 0, the default group that holds every interface


def _link_group(group: int) -> set[str]:
    out = sh.run(["ip", "-j", "link", "show", "group", str(group)], check=False)
    # iproute2 prints an empty object per non-member interface
    return {link["ifname"] for link in json.loads(out or "[]") if "ifname" in link}


def _unused_link_group() -> int:
    for group in range(_GROUP_BASE + os.getpid() % 256, _GROUP_BASE + 512):
        if not _link_group(group):
            return group
    raise RuntimeError("no unused link group")


def tagged_bridges(run_id: str | None = None) -> set[str]:
    """Bridges carrying our OVS tag (for one run, or for any run)."""
    out = sh.run(["ovs-vsctl", "--timeout=10", "--format=csv", "--no-headings", "--columns=name,external_ids",
                  "list", "Bridge"], check=False)
    found = set()
    for line in out.splitlines():
        name, _, ids = line.partition(",")
        if f"{OVS_TAG}=" in ids and (run_id is None or f"{OVS_TAG}={run_id}" in ids.replace('"', "")):
            found.add(name.strip('"'))
    return found


def all_bridges() -> set[str]:
    return set(sh.run(["ovs-vsctl", "--timeout=10", "list-br"], check=False).split())


def runs(unreadable: list[str] | None = None) -> list[RunState]:
    """Every run recorded under ROOT; one whose state cannot be read is left out (and, with
    `unreadable`, said there: "RUN: why")."""
    if not ROOT.is_dir():
        return []
    found = []
    for p in sorted(ROOT.iterdir()):
        if not os.path.lexists(p / "state.json"):
            continue
        try:
            found.append(RunState.load(p))
        except ParamError as e:
            if unreadable is not None:
                unreadable.append(f"{p.name}: cannot read its state, left as it is ({e})")
    return found


def alive(state: RunState) -> bool:
    """Is the process that owns `state` still running (the same process, not a reused PID)?"""
    pid, started = state.data["owner"]
    return pid != os.getpid() and started is not None and start_time(pid) == started


def clean(include_live: bool = False) -> list[str]:
    """Destroy every run whose owner is gone (or all runs), then any stray tagged bridge: one
    that no recorded run lists and that is not tagged with the run holding the machine's lock
    (a live fabric recorded under another HPN_RUN_DIR)."""
    done: list[str] = []
    for state in runs(done):
        if include_live or not alive(state):
            try:
                done += [f"{state.run_id}: {d}" for d in destroy(state) or ["(nothing left)"]]
            except TestbedError as e:   # say so, and go on with the other runs
                done.append(f"{state.run_id}: {e}")
    live_bridges = {b for s in runs() for b in s.data["bridges"]}
    held = held_run()
    stray = tagged_bridges() - live_bridges - (tagged_bridges(held) if held else set())
    if stray:
        _delete_bridges(stray, 0)
        done.append(f"stray tagged bridges: {', '.join(sorted(stray))}")
    return done
