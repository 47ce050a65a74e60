"""What a job's run gives back (jobrun.py, mpijob.py): each rank's result and the job's, and the
last line of a rank's log that a failure names. Records only, so both launchers share them."""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

POLL_S = 0.1            # s between looks at the ranks


@dataclass
class RankResult:
    rank: int
    host: str
    nic: str
    status: str            # ok | exit N | signal N | timeout | stopped (after another rank failed)
    returncode: int | None
    seconds: float
    last_line: str         # the last line it wrote to stderr, else to stdout
    stdout: str            # file names in the job's directory
    stderr: str


@dataclass
class JobResult:
    name: str
    ok: bool
    seconds: float
    directory: str
    ranks: list[RankResult]
    note: str = ""         # the launcher's own failure when no rank is to blame (mpirun's)

    @property
    def failed(self) -> RankResult | None:
        """The rank that failed the job: the first to fail, else the first that timed out."""
        bad = [r for r in self.ranks if r.status not in ("ok", "stopped")]
        return min(bad, key=lambda r: (r.status == "timeout", r.seconds, r.rank), default=None)

    def line(self) -> str:
        """One line: what the job did, or which rank failed it and how."""
        if self.ok:
            n = len(self.ranks)
            return f"job {self.name}: {n} rank{'s' * (n != 1)} exited 0 in {self.seconds:.1f} s"
        r = self.failed
        if r is None:
            return f"job {self.name}: {self.note or 'failed'} [logs: {self.directory}]"
        how = "timed out" if r.status == "timeout" else \
            f"exited {r.returncode}" if r.status.startswith("exit") else f"was killed ({r.status})"
        return (f"job {self.name}: rank {r.rank} ({r.nic}) {how} after {r.seconds:.1f} s: "
                f"{r.last_line or '(no output)'} [logs: {self.directory}]")

    def as_dict(self) -> dict:
        return {"name": self.name, "ok": self.ok, "seconds": round(self.seconds, 3),
                "directory": self.directory, "note": self.note,
                "ranks": [dataclasses.asdict(r) for r in self.ranks]}


def last_line(path: Path) -> str:
    """The last non-blank line of a log (its tail only: a log may be large)."""
    with open(path, "rb") as f:
        f.seek(max(0, os.fstat(f.fileno()).st_size - 8192))
        lines = [l.strip() for l in f.read().decode(errors="replace").splitlines() if l.strip()]
    return lines[-1][:300] if lines else ""
