"""The [[job]] tables of a job file or an experiment file, read and placed on the fabric model:
the one place for their keys and checks (testbed/workload/jobs.py places the ranks)."""
from __future__ import annotations

import os

from testbed.core import files, plugins
from testbed.core.errors import ParamError
from testbed.experiments.spec import Reader, tables
from testbed.workload.jobs import DEFAULT_PORT, TIMEOUT_S, Job, place

JOB_KEYS = ("name", "command", "per", "hosts", "rails", "ranks", "env", "timeout", "master_port",
            "launcher")
MAX_JOBS = 64


def read_jobs(top: Reader, fab, required: bool = False) -> tuple[Job, ...]:
    """Every [[job]] table of a file (a job file's, or an experiment file's: the same keys and
    checks), each placed on the fabric. A file with jobs is refused, as a plug-in is, if anybody
    but root, us or the user who ran sudo could have written it or swapped it in its directory:
    its commands run as root in the hosts."""
    entries = tables(top, "job", required=required)
    if entries:
        trusted(top.path)
    if len(entries) > MAX_JOBS:
        top.fail("job", f"{len(entries)} [[job]] entries: at most {MAX_JOBS}")
    jobs = []
    for i, entry in enumerate(entries, 1):
        r = Reader(top.path, top.locator, "job", i, entry, JOB_KEYS)
        jobs.append(read_job(r, fab, i))
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        top.fail("job", "two [[job]] tables share a name (it names their log directory)")
    return tuple(jobs)


def trusted(path: str) -> None:
    """ParamError (one line) unless the file at `path` passes the plug-ins' ownership rule."""
    resolved = plugins.resolve(path)
    try:
        problem = plugins.trust_problem(resolved, os.stat(resolved))
    except OSError as e:
        problem = e.strerror
    if problem:
        raise ParamError(f"{files.shown(path)}: {problem.replace('the plug-in', 'it')} "
                         "(the commands of its [[job]] tables run as root)")


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
