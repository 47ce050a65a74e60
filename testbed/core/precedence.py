"""Which way this machine offers to put a run's processes first in line for the CPU.

With a busy neighbour on the machine, the emulator (Open vSwitch, the controller, the hosts'
agents and iperf3) waits for the CPU and measures itself instead of the fabric. For the length
of a run its processes get precedence over the machine's other work, by the first of:

  cgroup2  a cgroup of the run with a high cpu.weight, where a cgroup2 mount offers the cpu
           controller to its children (cgroup.subtree_control lists it: Ubuntu 24.04);
  cgroup1  a cgroup of the run with high cpu.shares, where a cgroup v1 hierarchy has the cpu
           controller;
  nice     a lower nice value on each of the run's threads (always there for root).

This module only decides, from the files of a machine whose root is given (tests pass a fake
tree); testbed/emulation/cpu_precedence.py applies the choice and puts everything back. The
weights are about ten times the default (cpu.weight 100, cpu.shares 1024, nice 0's 1024):
enough for the emulator to win the CPU from a neighbour, not enough to starve the machine.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

WEIGHT = 1000        # cgroup v2 cpu.weight (default 100, range 1..10000)
SHARES = 10240       # cgroup v1 cpu.shares (default 1024)
NICE = -10           # a thread's nice value (weight 9548 against nice 0's 1024)
PREFIX = "hpn-testbed-"   # the name of a run's cgroup: PREFIX + run id, at the hierarchy's root


@dataclass(frozen=True)
class Mechanism:
    """How precedence is given: `kind` (cgroup2, cgroup1, nice or none), the hierarchy's root
    directory where the run's cgroup is made, the file and value that give it weight."""
    kind: str
    hierarchy: Path | None = None
    knob: str | None = None
    value: int = 0

    @property
    def cgroup(self) -> bool:
        return self.kind in ("cgroup1", "cgroup2")

    @property
    def threads_file(self) -> str:
        """The file listing (and, written, moving) each thread: v1 moves threads one by one."""
        return "tasks" if self.kind == "cgroup1" else "cgroup.threads"

    @property
    def move_file(self) -> str:
        """The file a thread is written to when it moves: v1 `tasks` (that thread only), v2
        `cgroup.procs` (its whole process: v2 keeps a process's threads together)."""
        return "tasks" if self.kind == "cgroup1" else "cgroup.procs"

    def describe(self) -> str:
        """One phrase for doctor and reports: "cgroup v1 cpu.shares 10240", "nice -10", "none"."""
        if self.cgroup:
            return f"cgroup v{self.kind[-1]} {self.knob} {self.value}"
        return f"nice {self.value}" if self.kind == "nice" else "none"


NICE_ONLY = Mechanism("nice", value=NICE)
NONE = Mechanism("none")


def parse_mounts(text: str) -> list[tuple[str, str, set[str]]]:
    """(type, mount point, options) of each cgroup mount in /proc/self/mounts' text."""
    found = []
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 4 and cols[2] in ("cgroup", "cgroup2"):
            point = cols[1].replace("\\040", " ")
            found.append((cols[2], point, set(cols[3].split(","))))
    return found


def _words(path: Path) -> set[str]:
    try:
        return set(path.read_text().split())
    except OSError:
        return set()


def choose(root: Path = Path("/"), is_root: bool = True) -> Mechanism:
    """The mechanism this machine (its files under `root`) offers, best first; NONE for a user
    who is not root (nothing a run could change)."""
    if not is_root:
        return NONE
    try:
        mounts = parse_mounts((root / "proc/self/mounts").read_text())
    except OSError:
        mounts = []
    for kind, point, options in mounts:
        top = root / point.lstrip("/")
        if kind == "cgroup2" and "rw" in options and "cpu" in _words(top / "cgroup.controllers") \
                and "cpu" in _words(top / "cgroup.subtree_control"):
            return Mechanism("cgroup2", top, "cpu.weight", WEIGHT)
    for kind, point, options in mounts:
        top = root / point.lstrip("/")
        if kind == "cgroup" and "rw" in options and "cpu" in options and (top / "cpu.shares").is_file():
            return Mechanism("cgroup1", top, "cpu.shares", SHARES)
    return NICE_ONLY


def hierarchies(root: Path = Path("/")) -> list[Path]:
    """Every cgroup mount point (to check that a recorded path is one of theirs)."""
    try:
        return [root / p.lstrip("/") for _, p, _ in parse_mounts((root / "proc/self/mounts").read_text())]
    except OSError:
        return []


def cgroup_of(proc_cgroup: str, kind: str) -> str | None:
    """A task's cgroup in the hierarchy of `kind`, from the text of /proc/TID/cgroup
    ("1:cpu,cpuacct:/path" for v1, "0::/path" for v2), as a path below the hierarchy's root."""
    for line in proc_cgroup.splitlines():
        ident, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if kind == "cgroup2" and ident == "0" and controllers == "":
            return path
        if kind == "cgroup1" and "cpu" in controllers.split(","):
            return path
    return None
