"""Your own distributed program as a job on the fabric (pure, no root): a Job says what each rank
runs and where; `place` puts its ranks on NICs and gives each one the command and environment a
launcher would (torchrun's MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK).

Placement: `per = "host"` gives one rank per host, rank r on rail `rails[r % len(rails)]` (the
rail-aligned rings of NCCL: rank r's traffic stays on one rail); `per = "nic"` gives one rank per
NIC on those rails, hosts in order, a host's ranks consecutive (local_rank counts them). A rank
talks over its NIC: its address ({addr}, TESTBED_ADDR) on its interface ({ifname}: the port, bond
or link that holds it, hostnet.nic_device), which GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME name.
"""
from __future__ import annotations

import shlex
import string
import sys
from dataclasses import dataclass, field

from testbed.core.errors import ParamError
from testbed.emulation.net.hostnet import nic_device
from testbed.model.fabric import Fabric, Nic

PLACEMENTS = ("nic", "host")
LAUNCHERS = ("direct", "mpi")   # each rank spawned in its host; or mpirun's (mpi.py)
PLACEHOLDERS = ("rank", "world_size", "local_rank", "master_addr", "master_port", "addr", "ifname",
                "nic", "host", "python")
DEFAULT_PORT = 29500         # torchrun's; a file's k-th job takes DEFAULT_PORT + k
TIMEOUT_S = (1.0, 86400.0)


@dataclass(frozen=True)
class Job:
    """What every rank runs (`command`, with {placeholders}), where (`per`, `hosts`, `rails`,
    `ranks`), with what extra environment (`env`, values may hold placeholders too) and how long
    it may take (`timeout`, s); `launcher`: "direct" (each rank spawned in its host) or "mpi"
    (mpirun starts them, testbed/workload/mpi.py). Empty `hosts` or `rails`: all of them;
    `ranks` None: every slot."""
    command: str
    name: str = "job"
    per: str = "host"
    hosts: tuple[str, ...] = ()
    rails: tuple[int, ...] = ()
    ranks: int | None = None
    env: tuple[tuple[str, str], ...] = ()
    timeout: float = 300.0
    master_port: int = DEFAULT_PORT
    launcher: str = "direct"


@dataclass(frozen=True)
class Rank:
    """One placed rank: where it runs, its command line (formatted) and its environment."""
    rank: int
    local_rank: int
    host: str
    nic: str
    addr: str
    ifname: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(compare=False)


def check(job: Job, fabric: Fabric) -> None:
    """Everything about `job` that can be wrong before it runs, as one-line ParamErrors."""
    if job.per not in PLACEMENTS:
        raise ParamError(f"job {job.name}: per={job.per!r}: choose from {', '.join(PLACEMENTS)}")
    if job.launcher not in LAUNCHERS:
        raise ParamError(f"job {job.name}: launcher={job.launcher!r}: choose from "
                         f"{', '.join(LAUNCHERS)}")
    if not job.command.strip():
        raise ParamError(f"job {job.name}: command is empty")
    if not TIMEOUT_S[0] <= job.timeout <= TIMEOUT_S[1]:
        raise ParamError(f"job {job.name}: timeout={job.timeout}: must be between "
                         f"{TIMEOUT_S[0]:g} and {TIMEOUT_S[1]:g} s")
    if not 1024 <= job.master_port <= 65535:
        raise ParamError(f"job {job.name}: master_port={job.master_port}: must be 1024-65535")
    try:
        words = shlex.split(job.command)
    except ValueError as e:
        raise ParamError(f"job {job.name}: command: {e}") from None
    for text in [*words, *(v for _, v in job.env)]:
        for name in _fields(text, job):
            if name not in PLACEHOLDERS:
                raise ParamError(f"job {job.name}: unknown placeholder {{{name}}} in {text!r}; "
                                 f"known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}")
    for host in job.hosts:
        if host not in fabric.hosts:
            raise ParamError(f"job {job.name}: no host {host!r} in this {fabric.family} fabric")
    if len(set(job.hosts)) != len(job.hosts):
        raise ParamError(f"job {job.name}: hosts: a host is named twice")
    if job.ranks is not None and job.ranks < 1:
        raise ParamError(f"job {job.name}: ranks={job.ranks}: need at least one rank")


def _fields(text: str, job: Job) -> list[str]:
    try:
        return [name for _, name, _, _ in string.Formatter().parse(text) if name is not None]
    except ValueError as e:     # a lone '{' or '}'
        raise ParamError(f"job {job.name}: {text!r}: {e} (write {{{{ and }}}} for braces)") from None


def slots(job: Job, fabric: Fabric) -> list[Nic]:
    """The NICs the ranks go on, in rank order (every slot: `ranks` takes the first ones)."""
    hosts = job.hosts or tuple(fabric.hosts)
    rails = job.rails or tuple(sorted({n.rail for h in hosts for n in fabric.hosts[h].nics}))
    for host in hosts:
        missing = [r for r in rails if r not in {n.rail for n in fabric.hosts[host].nics}]
        if missing:
            have = sorted({n.rail for n in fabric.hosts[host].nics})
            raise ParamError(f"job {job.name}: rail {missing[0]} does not exist on host {host} "
                             f"(its rails: {', '.join(map(str, have))})")
    if job.per == "nic":
        return [n for h in hosts for n in fabric.hosts[h].nics if n.rail in rails]
    return [next(n for n in fabric.hosts[h].nics if n.rail == rails[r % len(rails)])
            for r, h in enumerate(hosts)]


def place(job: Job, fabric: Fabric) -> list[Rank]:
    """The ranks of `job` on `fabric`. ParamError, one line, if it cannot be placed."""
    check(job, fabric)
    nics = slots(job, fabric)
    if job.ranks is not None and job.ranks > len(nics):
        unit = "NICs" if job.per == "nic" else "hosts"
        raise ParamError(f"job {job.name}: ranks={job.ranks}: more ranks than {unit} to place them "
                         f"on ({len(nics)})")
    nics = nics[:job.ranks or len(nics)]
    master = nics[0].ip
    local: dict[str, int] = {}
    ranks = []
    for r, nic in enumerate(nics):
        local_rank = local[nic.host] = local.get(nic.host, -1) + 1
        ifname = nic_device(nic)
        values = {"rank": r, "world_size": len(nics), "local_rank": local_rank,
                  "master_addr": master, "master_port": job.master_port, "addr": nic.ip,
                  "ifname": ifname, "nic": nic.name, "host": nic.host, "python": sys.executable}
        ranks.append(Rank(r, local_rank, nic.host, nic.name, nic.ip, ifname,
                          tuple(w.format(**values) for w in shlex.split(job.command)),
                          _env(job, values, ifname)))
    local_size = {h: n + 1 for h, n in local.items()}
    for rank in ranks:
        rank.env["LOCAL_WORLD_SIZE"] = str(local_size[rank.host])
    return ranks


def _env(job: Job, values: dict, ifname: str) -> dict[str, str]:
    env = {"MASTER_ADDR": values["master_addr"], "MASTER_PORT": str(job.master_port),
           "RANK": str(values["rank"]), "WORLD_SIZE": str(values["world_size"]),
           "LOCAL_RANK": str(values["local_rank"]), "TESTBED_ADDR": values["addr"],
           "TESTBED_NIC": values["nic"], "TESTBED_JOB": job.name,
           "GLOO_SOCKET_IFNAME": ifname, "NCCL_SOCKET_IFNAME": ifname}
    env.update((k, v.format(**values)) for k, v in job.env)
    return env
