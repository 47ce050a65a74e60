"""Running commands: fail loudly with the command and its output, never silently."""
from __future__ import annotations

import subprocess

from testbed.errors import TestbedError


def run(cmd: list[str] | str, *, input: str | None = None, check: bool = True,
        timeout: float = 60) -> str:
    """Run `cmd` (a list, or a string for the shell) and return its stdout."""
    proc = subprocess.run(cmd, shell=isinstance(cmd, str), input=input, capture_output=True,
                          text=True, timeout=timeout)
    if check and proc.returncode != 0:
        shown = cmd if isinstance(cmd, str) else " ".join(cmd)
        raise TestbedError(f"command failed ({proc.returncode}): {shown}\n"
                           f"{proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def ok(cmd: list[str] | str, timeout: float = 30) -> bool:
    """Did `cmd` succeed? For probes, where failing is an answer."""
    try:
        return subprocess.run(cmd, shell=isinstance(cmd, str), capture_output=True,
                              timeout=timeout).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def node_cmd(node, script: str) -> str:
    """Run a shell script in a Mininet node; raise with its output if any line fails."""
    return nodes_cmd([(node, script)])[0]


def nodes_cmd(jobs: list[tuple[object, str]]) -> list[str]:
    """Run one script per Mininet node, all nodes at once; raise if any script fails."""
    for node, script in jobs:   # each node's shell works while we start the next
        node.sendCmd(f"( set -e\n{script}\n) 2>&1; echo __rc=$?")
    outputs = [node.waitOutput() for node, _ in jobs]
    for (node, script), out in zip(jobs, outputs):
        body, _, rc = out.rpartition("__rc=")
        if rc.strip() != "0":
            raise TestbedError(f"on {node.name}: script failed ({rc.strip()}):\n{script}\n"
                               f"--- output:\n{body}")
    return [out.rpartition("__rc=")[0] for out in outputs]
