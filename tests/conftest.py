"""Root conftest for every test tree (unit, integration, fullkernel).

1. CI=true makes every skip a failure.  CI runs as root with Open vSwitch started (and the full
   kernel tests in the VM lane), so a skip there means a test silently did not run: a missing
   package, a service that did not start, a broken gate.  `pytest_runtest_makereport` (setup,
   call and teardown phases) and `pytest_make_collect_report` (module-level skips,
   importorskip) rewrite a "skipped" outcome into "failed" with the message
   "skipped under CI=true: <reason>".  Expected failures (xfail) are left alone.  Outside CI
   skips stay skips; `-ra` (pytest.ini) lists them with their reasons.

2. Gates by marker, checked before any fixture of the test is set up:
     integration  needs root and an answering Open vSwitch (`ovs-vsctl show`), else skip.
     fullkernel   needs root and the openvswitch, bonding and sch_netem modules (loaded with
                  modprobe if absent), else skip: on a kernel without them these tests run in
                  the VM lane (`make test`).  Where the modules are there but Open vSwitch is
                  not running (the lane's VM boots with nothing started), it is started here.
   Tests can also request the `root_and_ovs` fixture for the same gate as `integration`, and
   `as_nobody` for the argv prefix that runs a command as an unprivileged user.

3. Leftover check at session end (autouse session fixture `_no_leftovers`): after the last
   test, no OVS bridge tagged external-ids:hpn-testbed=..., no directory under
   /run/hpn-testbed ($HPN_RUN_DIR), and no process whose command line holds
   `controller.launcher` or `iperf3` may remain that the tests created.  "Created by the tests"
   means absent from a snapshot taken when the session's first test starts; for processes it
   also means carrying this session's token in their environment (set in os.environ here, so
   every child inherits it) or descending from this pytest process, so that another run on the
   same machine is not counted; a bridge or run directory is not counted while its run's
   owner (state.json) is alive and not ours.  Leftovers fail the session (an error at teardown of the last
   test) with the list; clean them with `hpn-testbed clean`.

4. Kept run directories (a run that fails keeps its directory, testbed/emulation/run/keep.py) go
   under pytest's temporary directory for the session ($HPN_KEEP_DIR, unless already set), not
   /var/tmp/hpn-testbed.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
RUN_DIR = Path(os.environ.get("HPN_RUN_DIR", "/run/hpn-testbed"))   # as testbed/runstate.py
OVS_TAG = "hpn-testbed"
PROC_WORDS = (b"controller.launcher", b"iperf3")
SESSION_ENV = "HPN_TESTBED_PYTEST_SESSION"
FULLKERNEL_MODULES = ("openvswitch", "bonding", "sch_netem")
OVS_CTL = "/usr/share/openvswitch/scripts/ovs-ctl"


# --- 1. CI=true: a skip is a failure --------------------------------------------------------

def _skip_reason(rep) -> str:
    lr = rep.longrepr
    if isinstance(lr, tuple) and len(lr) == 3:      # (path, lineno, "Skipped: reason")
        reason = str(lr[2])
    else:
        reason = str(lr)
    return reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason


def _fail_skip_under_ci(rep) -> None:
    if CI and rep.skipped and not hasattr(rep, "wasxfail"):
        rep.longrepr = f"skipped under CI=true: {_skip_reason(rep)}"
        rep.outcome = "failed"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_skip_under_ci(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_skip_under_ci(outcome.get_result())


def pytest_report_header(config):
    if CI:
        return "CI=true: skipped tests fail the run"


# --- 2. integration / fullkernel gates ------------------------------------------------------

def _run(*cmd: str, timeout: float = 15) -> bool:
    try:
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=timeout).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _ovs_answers() -> bool:
    return _run("ovs-vsctl", "--timeout=3", "show")


_gate_cache: dict[str, str | None] = {}


def _root_ovs_problem() -> str | None:
    """Why an integration test cannot run here, or None."""
    if os.geteuid() != 0:
        return "integration test: needs root (run as root, e.g. sudo make test)"
    if "ovs" not in _gate_cache:
        _gate_cache["ovs"] = None if _ovs_answers() else (
            "integration test: Open vSwitch is not running (`ovs-vsctl show` fails; "
            "scripts/install.sh starts it)")
    return _gate_cache["ovs"]


def _start_ovs() -> bool:
    if Path("/run/systemd/system").is_dir() or not os.access(OVS_CTL, os.X_OK):
        _run("systemctl", "start", "openvswitch-switch", timeout=60)
    else:
        _run(OVS_CTL, "start", timeout=60)
    return _ovs_answers()


def _fullkernel_problem() -> str | None:
    """Why a fullkernel test cannot run here, or None. Loads the modules and, on a kernel that
    has them, starts Open vSwitch if it is not running."""
    if "fullkernel" not in _gate_cache:
        if os.geteuid() != 0:
            problem = "fullkernel test: needs root"
        else:
            missing = [m for m in FULLKERNEL_MODULES
                       if not Path("/sys/module", m).exists() and not _run("modprobe", "-q", m)]
            if missing:
                problem = (f"fullkernel test: this kernel lacks {', '.join(missing)}; "
                           "these tests run in the VM lane (make test, tests/vm/run-lane)")
            elif not _ovs_answers() and not _start_ovs():
                problem = "fullkernel test: Open vSwitch is not running and did not start"
            else:
                problem = None
                _gate_cache["ovs"] = None
        _gate_cache["fullkernel"] = problem
    return _gate_cache["fullkernel"]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if item.get_closest_marker("fullkernel"):
        problem = _fullkernel_problem() or _root_ovs_problem()
    elif item.get_closest_marker("integration"):
        problem = _root_ovs_problem()
    else:
        return
    if problem:
        pytest.skip(problem)


@pytest.fixture
def root_and_ovs():
    """Skip (fail under CI=true) unless running as root with Open vSwitch answering."""
    problem = _root_ovs_problem()
    if problem:
        pytest.skip(problem)


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
# What `nobody` needs to read: this clone and the interpreter's environment (the venv)
_NEEDED = (Path(__file__).resolve().parents[1], Path(sys.prefix))


def _others_reach(path: Path) -> bool:
    """Whether a user with no relation to `path`'s owners can search every directory to it."""
    return all(p.stat().st_mode & stat.S_IXOTH for p in (path, *path.parents))


@pytest.fixture
def as_nobody() -> list[str]:
    """The argv prefix that runs a command as `nobody` (uid and gid 65534, no groups) when the
    tests run as root, [] otherwise. Where this clone or its venv is out of others' reach (a
    clone in root's 0700 home, as the distro lane's newcomer makes it), that user also keeps
    CAP_DAC_READ_SEARCH and only it: it can read the code, and write or connect to nothing
    that nobody could not."""
    if os.geteuid() != 0:
        return []
    if all(_others_reach(p) for p in _NEEDED):
        return list(NOBODY)
    return [*NOBODY, "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]


# --- 3. nothing left behind ---------------------------------------------------------------

def _tagged_bridges() -> set[str]:
    try:
        res = subprocess.run(["ovs-vsctl", "--timeout=5", "--format=csv",
                              "--columns=name,external_ids", "list", "Bridge"],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    if res.returncode != 0:          # not root, or OVS not running: nothing to see
        return set()
    found = set()
    tag = re.compile(r'(?:^|[{,\s])"?' + re.escape(OVS_TAG) + r'"?="?([^",}]*)')
    for row in list(csv.reader(io.StringIO(res.stdout)))[1:]:
        if len(row) >= 2:
            m = tag.search(row[1])
            if m:
                found.add(f"OVS bridge {row[0]} ({OVS_TAG}={m.group(1)})")
    return found


def _run_dirs() -> set[str]:
    try:
        return {f"run directory {p}" for p in RUN_DIR.iterdir() if p.is_dir()}
    except OSError:
        return set()


def _proc_start(pid: str) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]      # field 22: start time, after "comm)"


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _descends_from_us(pid: int) -> bool:
    me = os.getpid()
    for _ in range(64):
        pid = _ppid(pid)
        if pid == me:
            return True
        if pid <= 1:
            return False
    return False


def _processes() -> dict[tuple[str, str], bytes]:
    """(pid, start time) -> command line, for processes naming controller.launcher or iperf3."""
    procs = {}
    me = str(os.getpid())
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or entry.name == me:
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes()
        except OSError:
            continue
        if any(w in cmdline for w in PROC_WORDS):
            start = _proc_start(entry.name)
            if start is not None:
                procs[(entry.name, start)] = cmdline
    return procs


def _ours(pid: str, token: bytes) -> bool:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return True      # cannot tell (not root): new since the snapshot is all we know
    return token in environ.split(b"\0") or _descends_from_us(int(pid))


def _snapshot():
    return _tagged_bridges() | _run_dirs(), set(_processes())


def _run_of(thing: str) -> str:
    """The run a leftover line names: `run directory /run/hpn-testbed/RUN`, `OVS bridge B (tag=RUN)`."""
    return thing.rsplit("=", 1)[1].rstrip(")") if thing.startswith("OVS") else thing.rsplit("/", 1)[1]


def _foreign(thing: str, token: bytes) -> bool:
    """Is `thing` another live session's (a fabric another worktree or CI has up right now)? Its
    run's state.json names the owner (PID and start time); an owner alive and not ours is foreign.
    An owner gone, or no record, is a leftover."""
    try:
        pid, started = json.loads((RUN_DIR / _run_of(thing) / "state.json").read_text())["owner"]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return False
    alive = _proc_start(str(pid)) == str(started)
    return alive and int(pid) != os.getpid() and not _ours(str(pid), token)


def _leftovers(before, token: bytes) -> list[str]:
    things, procs = before
    left = sorted(t for t in (_tagged_bridges() | _run_dirs()) - things if not _foreign(t, token))
    for (pid, start), cmd in sorted(_processes().items()):
        if (pid, start) not in procs and _ours(pid, token):
            text = cmd.replace(b"\0", b" ").decode(errors="replace").strip()
            left.append(f"process {pid}: {text}")
    return left


@pytest.fixture(scope="session", autouse=True)
def _kept_runs_stay_in_pytests_temp(tmp_path_factory):
    """Runs the tests fail on purpose (a killed controller, a stopped one) keep their directory
    (testbed/emulation/run/keep.py): under pytest's own temporary directory, which pytest prunes,
    not /var/tmp/hpn-testbed, where every CI run used to leave four. HPN_KEEP_DIR, if set, wins."""
    if not os.environ.get("HPN_KEEP_DIR"):
        os.environ["HPN_KEEP_DIR"] = str(tmp_path_factory.mktemp("kept-runs"))
    yield


@pytest.fixture(scope="session", autouse=True)
def _no_leftovers():
    token_value = uuid.uuid4().hex
    os.environ[SESSION_ENV] = token_value
    token = f"{SESSION_ENV}={token_value}".encode()
    before = _snapshot()
    yield
    deadline = time.monotonic() + 5          # processes being stopped may take a moment to go
    left = _leftovers(before, token)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = _leftovers(before, token)
    if left:
        pytest.fail("the tests left behind (remove with `hpn-testbed clean`):\n  "
                    + "\n  ".join(left), pytrace=False)
