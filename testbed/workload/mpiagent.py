"""Open MPI's launch agent on the testbed (its `plm_rsh_agent`, in place of ssh): mpirun calls
`AGENT NODE ORTED-COMMAND...` for each host of the job (NODE: the host's address in the
hostfile); this enters that host's network and mount
namespaces (`mnexec -a PID`, as Mininet's own popen does) and runs the command there with
/bin/sh, as sshd would run it for a remote login. No sshd, no keys.

Where each host is: TESTBED_MPI_HOSTS=NODE=PID,... in the environment mpirun passes on (set by
the job runner, mpi.launcher_env). Run as a script, it imports nothing of the testbed: mpirun
starts it with the testbed's Python and no other path. An unknown host is one line, exit 2.
"""
from __future__ import annotations

import os
import sys

HOSTS_ENV = "TESTBED_MPI_HOSTS"     # the same name as mpi.HOSTS_ENV (tested)


def host_pids(text: str) -> dict[str, int]:
    """HOST=PID,... as a mapping (malformed entries are skipped)."""
    pairs = (item.partition("=") for item in text.split(",") if item)
    return {host: int(pid) for host, _, pid in pairs if pid.isdigit()}


def command(argv: list[str], pids: dict[str, int]) -> list[str]:
    """What to exec for `argv` (HOST, then the command's words, which Open MPI quotes for a
    remote shell); ValueError naming the host if it is not one of the job's."""
    if not argv:
        raise ValueError("usage: mpiagent.py HOST COMMAND...")
    host, words = argv[0], argv[1:]
    if host not in pids:
        raise ValueError(f"host {host!r} is not one of this job's ({', '.join(pids) or 'none'})")
    return ["mnexec", "-a", str(pids[host]), "/bin/sh", "-c", " ".join(w for w in words if w)]


def main() -> None:
    try:
        argv = command(sys.argv[1:], host_pids(os.environ.get(HOSTS_ENV, "")))
    except ValueError as e:
        print(f"mpiagent: {e}", file=sys.stderr)
        sys.exit(2)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main()
