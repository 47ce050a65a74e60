"""Keeping a run's directory (controller spec, status and log, iperf3 output, probe logs) past
its teardown: with `--keep`, and always when the run failed, it is copied to
/var/tmp/hpn-testbed/RUN (root only, mode 0700) before the run's own directory is removed, and
the user is told where. `HPN_KEEP=1` (what `--keep` sets) asks for it for every run of the
process, the scenarios' bring-ups included."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

KEEP_ROOT = Path(os.environ.get("HPN_KEEP_DIR", "/var/tmp/hpn-testbed"))


def wanted() -> bool:
    return os.environ.get("HPN_KEEP", "") not in ("", "0")


def failed(exc_type) -> bool:
    """Did the run end by a failure (not a clean exit, not Ctrl-C or a terminal that closed)?"""
    from testbed.core import interrupts
    return exc_type is not None and not issubclass(exc_type, (KeyboardInterrupt, interrupts.Terminated))


def keep(run_dir: Path) -> Path | None:
    """Copy `run_dir` under KEEP_ROOT (symlinks copied as links, never followed); say where."""
    if not run_dir.is_dir():
        return None
    KEEP_ROOT.mkdir(mode=0o700, parents=True, exist_ok=True)
    target = KEEP_ROOT / run_dir.name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(run_dir, target, symlinks=True)
    os.chmod(target, 0o700)
    try:
        print(f"hpn-testbed: run directory kept: {target}", file=sys.stderr, flush=True)
    except OSError:
        pass
    return target
