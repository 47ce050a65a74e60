"""Keeping a run's directory (controller spec, status and log, iperf3 output, probe logs) past
its teardown: with `--keep`, and always when the run failed, it is copied to
/var/tmp/hpn-testbed/RUN (or $HPN_KEEP_DIR/RUN; root only, mode 0700) before the run's own
directory is removed, and the user is told where. `HPN_KEEP=1` (what `--keep` sets) asks for it
for every run of the process, the scenarios' bring-ups included.

/var/tmp is every user's: a name there that another user made first (their own directory, or
a symlink to elsewhere) is not written into; the run's directory is then not kept, and the user
is told why (files.private_dir)."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from testbed.core import files
from testbed.core.errors import TestbedError

KEEP_ROOT = "/var/tmp/hpn-testbed"


def keep_root() -> Path:
    return Path(os.environ.get("HPN_KEEP_DIR") or KEEP_ROOT)


def wanted() -> bool:
    return os.environ.get("HPN_KEEP", "") not in ("", "0")


def failed(exc_type) -> bool:
    """Did the run end by a failure (not a clean exit, not Ctrl-C or a terminal that closed)?"""
    from testbed.core import interrupts
    return exc_type is not None and not issubclass(exc_type, (KeyboardInterrupt, interrupts.Terminated))


def failure(exc_type, exc) -> str | None:
    """What failed a run, in a line ("TestbedError: ..."), or None if it did not fail."""
    return f"{exc_type.__name__}: {exc}" if failed(exc_type) else None


def keep(run_dir: Path, why: str | None = None) -> Path | None:
    """Copy `run_dir` under keep_root() (symlinks copied as links, never followed), with `why`
    the run failed (keep.failure) as failure.txt; say where, or why it was not kept."""
    if not run_dir.is_dir():
        return None
    root, problem = files.private_dir(keep_root())
    if problem:
        _say(f"run directory not kept: {problem}")
        return None
    target = root / run_dir.name
    try:
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(run_dir, target, symlinks=True)
        os.chmod(target, 0o700)
        if why:
            files.write_file(target, "failure.txt", why + "\n")
    except (OSError, TestbedError) as e:    # the teardown that follows must run all the same
        _say(f"run directory not kept whole: {target}: {e}")
        return None
    _say(f"run directory kept: {target}")
    return target


def _say(line: str) -> None:
    try:
        print(f"hpn-testbed: {line}", file=sys.stderr, flush=True)
    except OSError:
        pass
