"""An MPI job's launch, pure: the hostfile, mpirun's command line and MCA parameters from a job's
placed ranks (jobs.py), and each rank's end read back from what its wrapper left.

Open MPI (Debian's `openmpi-bin`) starts its daemons (orted) with an rsh-like agent,
`plm_rsh_agent`: instead of ssh, ours (mpiagent.py) enters the target host's namespaces by the PID
that holds them, so no sshd runs anywhere. mpirun itself runs in rank 0's host. Each rank is one
app context of its own (`-np 1 --host H ARGV : ...`), so each gets its own formatted command line
and environment (jobs.place), wrapped in `sh -c` that keeps its stdout, stderr and exit status
in the job's directory (rankN.out, rankN.err, rankN.rc): the same files a direct job keeps.

Which NICs carry MPI's traffic: each rank's own interface, named as on a real cluster
(btl_tcp_if_include, narrowed per rank by OMPI_MCA_btl_tcp_if_include in its environment), and the
out-of-band channel on the placement's addresses as /32 networks (oob_tcp_if_include). Open MPI's
TCP BTL sends from the first address of the interface it uses, so each NIC has an interface of
its own whose one address is the NIC's, on every path (hostnet.nic_device). `btl = tcp,self`: the
emulated hosts share one kernel, and shared memory between ranks of different hosts would bypass
the fabric.
"""
from __future__ import annotations

import shlex
from pathlib import Path

from testbed.workload.jobs import Rank

ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
HOSTS_ENV = "TESTBED_MPI_HOSTS"      # HOST=PID,... : where the launch agent finds each host
AGENT = Path(__file__).with_name("mpiagent.py")
# Keeps a rank's output and exit status in $0.out, $0.err, $0.rc ($0: the job's dir/rankN).
WRAPPER = '"$@" >"$0.out" 2>"$0.err"; c=$?; echo $c >"$0.rc"; exit $c'


def nodes(ranks: list[Rank]) -> dict[str, str]:
    """host -> the name Open MPI knows it by: its first rank's NIC address. An address, not the
    host's name: mpirun looks each name up, and a lookup from inside a host, whose namespace
    has no route to the machine's resolver, waits for DNS's timeouts; an address it compares
    with its own interfaces instead (rank 0's is local: mpirun runs it without a daemon)."""
    first: dict[str, str] = {}
    for rank in ranks:
        first.setdefault(rank.host, rank.addr)
    return first


def hostfile(ranks: list[Rank]) -> str:
    """One line per host in rank order (by its node address), its slots the number of ranks
    placed on it."""
    slots: dict[str, int] = {}
    for rank in ranks:
        slots[rank.host] = slots.get(rank.host, 0) + 1
    names = nodes(ranks)
    return "".join(f"{names[host]} slots={n}\n" for host, n in slots.items())


def cidrs(ranks: list[Rank]) -> str:
    """The ranks' NIC addresses as /32 networks, each once, in rank order."""
    return ",".join(dict.fromkeys(f"{r.addr}/32" for r in ranks))


def mca(ranks: list[Rank]) -> dict[str, str]:
    """The MCA parameters every daemon and rank gets (module docstring: why each)."""
    return {"plm_rsh_no_tree_spawn": "1", "btl": "tcp,self", "oob_tcp_if_include": cidrs(ranks),
            "btl_tcp_if_include": ",".join(dict.fromkeys(r.ifname for r in ranks))}


def mpirun_argv(ranks: list[Rank], hostfile_path: str | Path, directory: str | Path,
                python: str, mpirun: str = "mpirun") -> list[str]:
    """mpirun's command line: the hostfile, our launch agent, the MCA parameters, then one app
    context per rank: its environment (`env K=V`) and command inside the keeping wrapper."""
    agent = f"{python} {AGENT}"
    argv = [mpirun, "--hostfile", str(hostfile_path), "--mca", "plm_rsh_agent", agent]
    for key, value in mca(ranks).items():
        argv += ["--mca", key, value]
    names = nodes(ranks)
    for i, rank in enumerate(ranks):
        own = {**rank.env, "OMPI_MCA_btl_tcp_if_include": rank.ifname}
        argv += [*([":"] if i else []), "-np", "1", "--host", names[rank.host],
                 "sh", "-c", WRAPPER, str(Path(directory) / f"rank{rank.rank}"),
                 "env", *(f"{k}={v}" for k, v in own.items()), *rank.argv]
    return argv


def launcher_env(ranks: list[Rank], host_pids: dict[str, int]) -> dict[str, str]:
    """mpirun's environment on top of ours: root allowed (the testbed runs as root), and for
    the agent each node (its address, `nodes`) with the PID that holds its host's namespaces."""
    pids = ",".join(f"{node}={host_pids[host]}" for host, node in nodes(ranks).items())
    return {**ROOT_ENV, HOSTS_ENV: pids}


def rank_end(text: str | None) -> tuple[str, int | None]:
    """A rank's status from its rankN.rc ('0', '1', '143'; None when it never wrote one: it
    was stopped with the job): ok, exit N, signal N (a shell's 128 + N), or stopped."""
    if text is None or not text.strip().isdigit():
        return "stopped", None
    code = int(text)
    if code == 0:
        return "ok", 0
    return (f"signal {code - 128}", -(code - 128)) if code > 128 else (f"exit {code}", code)


def describe(argv: list[str]) -> str:
    """mpirun's command line as a shell would read it (for the log)."""
    return shlex.join(argv)
