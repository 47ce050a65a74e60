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
Removing what a run recorded is teardown.py's; the processes' identity is processes.py's.
"""
from __future__ import annotations

import errno
import fcntl
import itertools
import json
import os
import threading
import time
from pathlib import Path

from testbed.core import files
from testbed.core.errors import ParamError
from testbed.emulation.run import keep
from testbed.emulation.run.processes import exited, owns, start_time

MACHINE_ROOT = Path("/run/hpn-testbed")      # the machine's run root: where the lock always is
ROOT = Path(os.environ.get("HPN_RUN_DIR") or MACHINE_ROOT)
LOCK_FILE = MACHINE_ROOT / "lock"
OUTSIDE = "outside.jsonl"   # what other processes recorded for this run (add_outside)
LISTS = ("pids", "bridges", "root_intfs", "nft_tables", "dirs", "knobs")   # knobs: rcu.py, sendbuf.py


class RunState:
    admit = None    # called with the PIDs of each process recorded (cpu_precedence.py sets it)

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.dir = ROOT / run_id
        self._lock = threading.Lock()
        self._outputs = itertools.count(1)
        self.data = {"owner": [os.getpid(), start_time(os.getpid())], "pids": [], "bridges": [],
                     "root_intfs": [], "nft_tables": [], "dirs": [], "knobs": [], "created": time.time(),
                     "about": {}}

    def create(self) -> RunState:
        ROOT.mkdir(mode=0o755, parents=True, exist_ok=True)
        self.dir.mkdir(mode=0o700, exist_ok=False)
        self.save()
        return self

    def file(self, name: str) -> Path:
        """A run-time file of this run: inside its private directory, removed with it."""
        return self.dir / name

    def output(self, name: str) -> Path:
        """A file for one part's output (`iperf3.json` -> `iperf3-3.json`): numbered, so that a
        part run again in the same run (a probe each round), or by another process attached to
        the run, does not overwrite what --keep keeps."""
        plain = Path(name)
        while True:
            path = self.dir / f"{plain.stem}-{next(self._outputs)}{plain.suffix}"
            if not path.exists():
                return path

    def done_with(self, path: Path) -> None:
        """`path` (an iperf3 client's JSON, a probe's log) has been read: removed now, so a long
        run's directory does not grow, unless the run's directory is to be kept (--keep), which
        then keeps it as the README says (keep.py)."""
        if not keep.wanted():
            path.unlink(missing_ok=True)

    def record(self, name: str, text: str) -> None:
        """Output a part gave on a pipe rather than in a file (the prober's figures), written into
        the run's directory, numbered as output() numbers, when that is to be kept (--keep);
        nothing otherwise."""
        if keep.wanted():
            files.write_file(self.dir, self.output(name).name, text)

    def add_process(self, pid: int, marker: str) -> None:
        self.add_processes((pid, marker))

    def add_processes(self, *pairs: tuple[int, str]) -> None:
        self.add("pids", *[[pid, marker, start_time(pid)] for pid, marker in pairs])
        if self.admit is not None:
            self.admit([pid for pid, _ in pairs])

    def live_processes(self) -> list[tuple[int, str]]:
        """The recorded processes that still run (the same processes, not reused PIDs)."""
        return [(pid, marker) for pid, marker, started in self.data["pids"]
                if owns(pid, marker, started)]

    def save(self) -> None:
        files.write_json(self.dir, "state.json", self.data)    # atomic: `clean` never sees half

    def add(self, key: str, *items) -> None:
        with self._lock:   # collectives spawn their agents from several threads
            self.data[key].extend(items)
            self.save()

    def add_outside(self, key: str, item: str) -> None:
        """Record `item` under `key` from a process other than the run's owner (`hpn-testbed link
        impair`): a line appended to a file of its own (OUTSIDE), since the owner rewrites
        state.json whole; `listed` reads both."""
        fd = os.open(self.file(OUTSIDE), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, (json.dumps([key, item]) + "\n").encode())
        finally:
            os.close(fd)

    def listed(self, key: str) -> list[str]:
        """`key`'s items: state.json's, then those other processes added (names, each once)."""
        try:
            lines = self.file(OUTSIDE).read_text()[:files.STATE_MAX].splitlines()
        except OSError:
            lines = []
        outside = []
        for line in lines:
            try:
                k, item = json.loads(line)
            except ValueError:
                continue       # a line cut short: nothing to act on
            if k == key and isinstance(item, str):
                outside.append(item)
        return list(dict.fromkeys([*self.data[key], *outside]))

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


def check_root() -> None:
    """ParamError (one line) unless ROOT (HPN_RUN_DIR) is a directory of runs, or can be made
    one (testbed/core/files.py's rules for an output directory), before anything exists."""
    problem = files.output_problem(str(ROOT), directory=True)
    if problem:
        raise ParamError(f"the run directory {files.shown(ROOT)} (HPN_RUN_DIR): {problem}")


def _malformed(data) -> str | None:
    """What is wrong with a state.json's shape, or None. Every field the testbed reads is checked
    here, the one reader: `ps`, `clean`, `trace` and `capture` then use them as they are."""
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
    if not _pids_by_name(data.get("hosts", {})):
        return "hosts is not {name: pid}"
    created = data.get("created")
    if created is not None and not (isinstance(created, (int, float)) and not isinstance(created, bool)
                                    and 0 <= created < 2**40):
        return "created is not a time"
    return _about_problem(data.get("about", {})) or _servers_problem(data.get("servers"))


ABOUT = {"family": str, "datapath": str, "switches": int, "hosts": int, "nics": int, "queue_bytes": int}


def _about_problem(about) -> str | None:
    if not (isinstance(about, dict) and all(
            v is None or (isinstance(v, ABOUT[k]) and (ABOUT[k] is str or _int_or_none(v)))
            for k, v in about.items() if k in ABOUT)):
        return "about is not {family, switches, hosts, nics, datapath, queue_bytes}"
    return None


def _servers_problem(servers) -> str | None:
    """A run across servers (cluster.py's record): {name: {ip, ssh, hosts, intfs, bridges}}."""
    def entry_ok(e) -> bool:
        return (isinstance(e, dict) and isinstance(e.get("ip"), str) and _names(e.get("ssh"))
                and _names(e.get("intfs")) and _names(e.get("bridges"))
                and _pids_by_name(e.get("hosts")))
    if servers is not None and not (isinstance(servers, dict) and all(map(entry_ok, servers.values()))):
        return "servers is not {name: {ip, ssh, hosts, intfs, bridges}}"
    return None


def _names(x) -> bool:
    return isinstance(x, list) and all(isinstance(n, str) for n in x)


def _pids_by_name(x) -> bool:
    return isinstance(x, dict) and all(isinstance(v, int) and _int_or_none(v) and v > 0 for v in x.values())


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


def runs(unreadable: list[str] | None = None) -> list[RunState]:
    """Every run recorded under ROOT; one whose state cannot be read is left out (and, with
    `unreadable`, said there: "RUN: why")."""
    found, bad = census()
    if unreadable is not None:
        unreadable += [f"{run}: cannot read its state, left as it is ({why})" for run, why in bad.items()]
    return found


def census() -> tuple[list[RunState], dict[str, str]]:
    """The runs recorded under ROOT, and those whose state cannot be read: {run: why}. A run
    directory we may not enter (root's 0700, as another user sees it) is one of those, why
    NOT_OURS: it is never taken for "no fabric"."""
    try:
        entries = sorted(ROOT.iterdir()) if ROOT.is_dir() else []
    except OSError as e:
        return [], {str(ROOT): e.strerror or str(e)}
    found, bad = [], {}
    for p in entries:
        try:
            os.lstat(p / "state.json")
        except (FileNotFoundError, NotADirectoryError):     # the lock, the servers' directory
            continue
        except OSError as e:
            bad[p.name] = NOT_OURS if e.errno == errno.EACCES else e.strerror
            continue
        try:
            found.append(RunState.load(p))
        except ParamError as e:
            bad[p.name] = NOT_OURS if os.geteuid() != 0 and not os.access(p / "state.json", os.R_OK) \
                else str(e)
    return found, bad


NOT_OURS = "its state is root's"


def alive(state: RunState) -> bool:
    """Is the process that owns `state` still running (the same process, not a reused PID, and
    not a zombie: a run killed before its teardown, whose parent has not reaped it, owns nothing
    any more and `clean` must take its leftovers)?"""
    pid, started = state.data["owner"]
    return pid != os.getpid() and started is not None and start_time(pid) == started and not exited(pid)
