"""A user's own controller app (`up --controller-app FILE.py | osken:MODULE [--beside]`),
checked before anything is built.

An app written against the Ryu API runs in our launcher (controller/launcher.py), on the run's
root-only Unix socket, watched by the same watchdog, in one of two modes:
- instead of ours (the default): a bare fabric. Our app does not run, nothing writes the
  controller status (testbed/model/contract.py), hosts' NICs are on-link in one IPv4 subnet (no
  gateway), and the bridges offer every OpenFlow version the app declares (and 1.5, for our own
  ovs-ofctl reads). The user's app does everything.
- beside ours (`beside`): both apps in one os-ken process. Ours keeps tables 0 and 1 and every
  group; a packet table 1 does not route goes on to table 2 (TABLE_USER) and on, which are the
  user's. The app must accept OpenFlow 1.5 (declare it in OFP_VERSIONS, or declare none).

The app is looked at by `python -m controller.appcheck` in a process of its own (bytecode off):
a missing file, a name that is not .py, an unknown module or one without an OSKenApp subclass
is one line (ParamError), before any fabric exists. A file is trusted as a plug-in is
(testbed/core/plugins.py: its owner and who may write it and the directories above it, 1 MB at
most); its sha256 goes into the run's spec, and the launcher runs it only if it still matches.
A remote controller is refused with one line (`remote_controller`): an open OpenFlow port would
let anyone program the fabric.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from testbed.core import plugins
from testbed.core.errors import ParamError

PROJECT = Path(__file__).resolve().parents[3]
OSKEN_PREFIX = "osken:"
EXAMPLE = "osken:mypackage.myapp"
MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
CHECK_TIMEOUT_S = 30.0
ANSWER_MAX = 65536                    # bytes of the check's answer read at most
OF15 = 6                              # the wire version of OpenFlow 1.5: what our app speaks
OSKEN_VERSIONS = (1, 3, 4, 5, 6)      # OpenFlow 1.0, 1.2, 1.3, 1.4, 1.5 (os-ken's ofproto)
OVS_NAMES = {1: "OpenFlow10", 3: "OpenFlow12", 4: "OpenFlow13", 5: "OpenFlow14", 6: "OpenFlow15"}


@dataclass(frozen=True)
class ControllerApp:
    """A user's app: `target` is what os-ken loads (a module name or an absolute .py path),
    `label` what the user wrote; `versions` the OpenFlow wire versions it accepts; `sha256` that
    of a file's bytes as checked."""
    target: str
    label: str
    beside: bool = False
    cls: str = ""
    versions: tuple[int, ...] = OSKEN_VERSIONS
    sha256: str = ""

    def bridge_protocols(self) -> str:
        """The bridges' `protocols`: the app's versions, and 1.5 for our ovs-ofctl reads."""
        return ",".join(OVS_NAMES[v] for v in sorted(set(self.versions) | {OF15}) if v in OVS_NAMES)

    def describe(self) -> dict:
        return {"app": self.label, "class": self.cls,
                "mode": "beside ours" if self.beside else "instead of ours"}


def parse(spec: str, beside: bool = False) -> ControllerApp:
    """The app `spec` names (`osken:MODULE` or a path to a .py file), statically checked."""
    where = f"--controller-app {spec}"
    if spec.startswith(OSKEN_PREFIX):
        module = spec[len(OSKEN_PREFIX):]
        if not MODULE.match(module):
            raise ParamError(f"{where}: {module!r} is not a module name (e.g. {EXAMPLE})")
        return ControllerApp(module, spec, beside)
    path = Path(spec)
    if path.suffix != ".py":
        raise ParamError(f"{where}: not a .py file (a module: osken:MODULE, e.g. {EXAMPLE})")
    if not path.exists():
        raise ParamError(f"{where}: no such file")
    if not path.is_file():
        raise ParamError(f"{where}: not a regular file")
    target = str(path.resolve())
    if "," in target:
        raise ParamError(f"{where}: a path with a comma (os-ken splits its app list on commas)")
    try:
        data = plugins.read(path)[1]
    except ParamError as e:
        raise ParamError(f"--controller-app {e}") from None
    return ControllerApp(target, spec, beside, sha256=hashlib.sha256(data).hexdigest())


def inspect(app: ControllerApp) -> ControllerApp:
    """`app` with its class and OpenFlow versions, from `python -m controller.appcheck` (which
    imports it in a process of its own and answers on a pipe); ParamError (one line) if it is no
    runnable app. What the app prints is discarded; whatever it started (a fork, a thread that
    outlives the import) is ended with the check's own process group."""
    where = f"--controller-app {app.label}"
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=f"{PROJECT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    answer = _ask([sys.executable, "-m", "controller.appcheck", app.target], env, where)
    try:
        found = json.loads(answer)
        if "error" in found:
            raise ParamError(f"{where}: {str(found['error']).splitlines()[0]}")
        versions = (OSKEN_VERSIONS if found["versions"] is None
                    else tuple(int(v) for v in found["versions"]))
        cls = str(found["class"])
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        raise ParamError(f"{where}: the check gave no answer (the app ended it)") from None
    if app.beside and OF15 not in versions:
        raise ParamError(f"{where} --beside: {cls} speaks OpenFlow "
                         f"{', '.join(OVS_NAMES.get(v, str(v)) for v in versions)} only; beside ours "
                         "it must accept OpenFlow 1.5 (OFP_VERSIONS)")
    return ControllerApp(app.target, app.label, app.beside, cls, versions)


def _ask(argv: list[str], env: dict, where: str) -> str:
    """Run the check `argv` + [FD] in a session of its own, its stdout and stderr discarded;
    its answer, at most ANSWER_MAX bytes read from the pipe FD. The check's process group is
    killed when it answers, times out or we are interrupted, so nothing it began outlives it."""
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen([*argv, str(write_fd)], env=env, cwd=PROJECT, pass_fds=(write_fd,),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    try:
        with os.fdopen(read_fd, "rb") as pipe:
            answer = _read_until(pipe, proc, CHECK_TIMEOUT_S)
        if answer is None:
            raise ParamError(f"{where}: importing it took over {CHECK_TIMEOUT_S:.0f} s")
        return answer.decode(errors="replace")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)    # the group we made: the check and its forks
        except ProcessLookupError:
            pass
        proc.wait()


def _read_until(pipe, proc, timeout: float) -> bytes | None:
    """What the check wrote before closing its end (or ending), at most ANSWER_MAX bytes; None
    if `timeout` passed first."""
    deadline = time.monotonic() + timeout
    got = b""
    while len(got) < ANSWER_MAX:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([pipe], [], [], min(left, 0.5))
        if ready:
            chunk = os.read(pipe.fileno(), ANSWER_MAX - len(got))
            if not chunk:
                break
            got += chunk
            if got.endswith(b"\n"):
                break
        elif proc.poll() is not None and not select.select([pipe], [], [], 0)[0]:
            break
    return got


def checked(spec: str | None, beside: bool = False) -> ControllerApp | None:
    """parse() and inspect() of `spec` (None: our controller alone; "" is refused)."""
    if spec is not None and not spec.strip():
        raise ParamError("--controller-app: empty; give FILE.py or osken:MODULE")
    if spec is None:
        if beside:
            raise ParamError("--beside: only with --controller-app (it runs that app beside ours)")
        return None
    app = parse(spec, beside)
    return dataclasses.replace(inspect(app), sha256=app.sha256)     # what the launcher compares


def remote_controller(target: str) -> None:
    """`--controller TARGET`: always refused (one line), saying why and what to do instead."""
    kind = target.split(":", 1)[0]
    if kind in ("tcp", "ptcp"):
        raise ParamError(f"--controller {target}: a plaintext OpenFlow port lets anyone who can reach "
                         "it program the fabric; a remote controller needs mutual TLS (ssl:HOST:PORT "
                         "with certificates), which `up` does not offer yet: run your app in our "
                         "launcher with --controller-app FILE.py (docs/extending.md)")
    raise ParamError(f"--controller {target}: remote controllers are not supported yet (mutual TLS "
                     "only, when they are); run your app with --controller-app FILE.py "
                     "(docs/extending.md)")
