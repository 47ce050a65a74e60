"""Running commands: fail loudly with the command and its output, never silently."""
from __future__ import annotations

import subprocess

from testbed.core import progress
from testbed.core.errors import TestbedError


def run(cmd: list[str] | str, *, input: str | None = None, check: bool = True,
        timeout: float = 60) -> str:
    """Run `cmd` (a list, or a string for the shell) and return its stdout."""
    progress.command(cmd if isinstance(cmd, str) else " ".join(cmd))
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


def nodes_cmd(jobs: list[tuple[object, str]], timeout: float = 60) -> list[str]:
    """Run one script per Mininet node, all nodes at once; raise if any script fails.

    Each script is its own process in the node's namespace (`mnexec -da PID`), not a line
    typed into the node's interactive shell: a Ctrl-C that interrupted that shell mid-command
    must not stop cleanup from running commands in the node afterwards."""
    for node, script in jobs:
        progress.command(f"on {node.name}: {script}")
    procs = [node.popen(["bash", "-c", "set -e\n" + script], stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True) for node, script in jobs]
    try:
        outputs = [proc.communicate(timeout=timeout)[0] for proc in procs]
    except subprocess.TimeoutExpired as e:
        for proc in procs:   # ours, by PID: none may outlive the call
            proc.kill()
            proc.wait()
        raise TestbedError(f"a node script ran longer than {timeout:.0f} s: {e.cmd}") from None
    for (node, script), proc, out in zip(jobs, procs, outputs):
        if proc.returncode != 0:
            raise TestbedError(f"on {node.name}: script failed ({proc.returncode}):\n{script}\n"
                               f"--- output:\n{out}")
    return outputs


def testbed_run(argv: list[str], teardown_s: float = 120, **kwargs) -> subprocess.CompletedProcess:
    """`python -m testbed ARGV...` as a child (output captured as text), for a bench that drives
    whole runs. Interrupted, it hands the interrupt on and waits up to `teardown_s` for the
    child's own teardown before it re-raises: `subprocess.run` would kill the child a quarter of
    a second later and leave its fabric behind (then only `hpn-testbed clean` removes it)."""
    import signal
    import sys
    with subprocess.Popen([sys.executable, "-m", "testbed", *argv], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, **kwargs) as child:
        try:
            out, err = child.communicate()
        except KeyboardInterrupt:
            child.send_signal(signal.SIGINT)
            try:
                child.communicate(timeout=teardown_s)
            except subprocess.TimeoutExpired:
                child.kill()
            raise
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)
