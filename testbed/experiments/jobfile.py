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
from dataclasses import dataclass
from pathlib import Path

from testbed.experiments.check import read_fabric
from testbed.experiments.jobtables import read_jobs
from testbed.experiments.spec import Reader, parse
from testbed.workload.jobs import Job

TOP_KEYS = ("name", "description", "fabric", "job")


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
    """The job file at `path`, checked (its jobs' commands run as root: read_jobs first checks
    who could have written it)."""
    data, locator = parse(path)
    top = Reader(path, locator, "", 1, data, TOP_KEYS)
    fab, family, settings = read_fabric(Reader(path, locator, "fabric", 1,
                                               top.get("fabric", dict, required=True), None))
    return JobFile(path, top.get("name", str, Path(path).stem), top.get("description", str, ""),
                   family, settings, read_jobs(top, fab, required=True), fabric=fab)
