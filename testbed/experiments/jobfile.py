"""A job file (TOML) read and checked, pure: the fabric it names and its [[job]] tables, every rank
placed on the fabric model (testbed/workload/jobs.py) before anything is built.

    [fabric]
    family = "hpn"            # and any of the family's parameters, or preset = "..."
    [[job]]
    name = "allreduce"
    command = "{python} allreduce_torch.py --sizes 4K,1M"   # paths: relative to this file
    per = "host"              # or "nic"
    rails = [0]               # default: every rail
    hosts = ["p0s0h0", ...]   # default: every host
    ranks = 4                 # default: every slot
    timeout = 120             # s
    launcher = "mpi"          # default "direct": each rank spawned in its host; "mpi": mpirun
    [job.env]
    OMP_NUM_THREADS = "1"

A problem is one line, `FILE:LINE: [[job]] 1: rails: rail 2 does not exist on host ...`
(ParamError, exit status 2), as for experiment files (spec.py).
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from testbed.core import files, plugins
from testbed.core.errors import ParamError
from testbed.experiments.check import read_fabric, tables
from testbed.experiments.spec import Reader, parse
from testbed.workload.jobs import DEFAULT_PORT, TIMEOUT_S, Job, place

TOP_KEYS = ("name", "description", "fabric", "job")
JOB_KEYS = ("name", "command", "per", "hosts", "rails", "ranks", "env", "timeout", "master_port",
            "launcher")
MAX_JOBS = 64


@dataclass(frozen=True)
class JobFile:
    path: str
    name: str
    description: str
    family: str
    settings: dict
    jobs: tuple[Job, ...]
    fabric: object = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def directory(self) -> str:
        """Where the ranks start: the file's directory, so its commands name files beside it."""
        return str(Path(self.path).resolve().parent)


def load(path: str) -> JobFile:
    """The job file at `path`, checked; first, as a plug-in is (testbed/core/plugins.py), that
    nobody but root, us or the user who ran sudo could have written it or swapped it in its
    directory: its commands run as root in the hosts."""
    resolved = plugins.resolve(path)
    try:
        st = os.stat(resolved)
    except OSError as e:
        raise ParamError(f"job file {files.shown(path)}: {e.strerror}") from None
    problem = plugins.trust_problem(resolved, st)
    if problem:
        raise ParamError(f"job file {files.shown(path)}: {problem.replace('the plug-in', 'it')} "
                         "(its commands run as root)")
    data, locator = parse(path)
    top = Reader(path, locator, "", 1, data, TOP_KEYS)
    fab, family, settings = read_fabric(Reader(path, locator, "fabric", 1,
                                               top.get("fabric", dict, required=True), None))
    entries = tables(top, "job", required=True)
    if len(entries) > MAX_JOBS:
        top.fail("job", f"{len(entries)} [[job]] entries: at most {MAX_JOBS}")
    jobs = []
    for i, entry in enumerate(entries, 1):
        r = Reader(path, locator, "job", i, entry, None)
        r.where = f"[[job]] {i}"
        for key in entry:
            if key not in JOB_KEYS:
                r.fail(key, f"unknown key; known: {', '.join(JOB_KEYS)}")
        jobs.append(read_job(r, fab, i))
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        top.fail("job", "two [[job]] tables share a name (it names their log directory)")
    return JobFile(path, top.get("name", str, Path(path).stem), top.get("description", str, ""),
                   family, settings, tuple(jobs), fabric=fab)


def read_job(r: Reader, fab, index: int) -> Job:
    """One [[job]]: its keys' types, then its placement on the fabric (`ranks`, `rails`, ...)."""
    env = r.get("env", dict, {})
    if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in env.values()):
        r.fail("env", "expected a table of NAME = \"value\"")
    hosts, rails = r.get("hosts", list, []), r.get("rails", list, [])
    if not all(isinstance(h, str) for h in hosts):
        r.fail("hosts", "expected a list of host names")
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in rails):
        r.fail("rails", "expected a list of rail numbers")
    name = r.get("name", str, f"job{index}")
    if files.name_problem(name):
        r.fail("name", f"{name!r} {files.name_problem(name)}; it names the job's log directory")
    job = Job(command=r.get("command", str, required=True), name=name,
              per=r.get("per", str, "host"), hosts=tuple(hosts), rails=tuple(rails),
              ranks=r.get("ranks", int), env=tuple((k, str(v)) for k, v in env.items()),
              timeout=r.get("timeout", float, 300.0, bounds=TIMEOUT_S),
              master_port=r.get("master_port", int, DEFAULT_PORT + index - 1, bounds=(1024, 65535)),
              launcher=r.get("launcher", str, "direct"))
    try:
        place(job, fab)
    except ParamError as e:
        message = str(e).removeprefix(f"job {job.name}: ")
        r.fail(_key_of(message), message)
    return job


def _key_of(message: str) -> str | None:
    """The [[job]] key a placement error is about, for the line it names."""
    for key, words in (("launcher", "launcher="), ("rails", "rail "), ("ranks", "ranks="),
                       ("per", "per="), ("hosts", "host"),
                       ("command", "command"), ("command", "placeholder")):
        if message.startswith(words) or words in message.split(":")[0]:
            return key
    return None
