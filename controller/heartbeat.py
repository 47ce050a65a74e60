"""The controller's heartbeat: its monotonic clock, stamped into a file of the run every
interval by a thread of its own, so the testbed's watchdog (testbed/emulation/control/watchdog.py) can
tell a controller that stopped answering (SIGSTOP, a hang) from one that is merely busy.

The file is opened once (O_NOFOLLOW, in the run's root-only directory) and overwritten in
place with pwrite: a few bytes per beat, no path lookup, no rename.
"""
import os
import threading
import time


def start(path, interval: float) -> threading.Thread | None:
    """Stamp `path` every `interval` seconds from a daemon thread (None: no heartbeat asked)."""
    if not path:
        return None
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)

    def beat():
        while True:
            os.pwrite(fd, f"{time.monotonic():.3f}\n".rjust(24).encode(), 0)
            time.sleep(interval)
    thread = threading.Thread(target=beat, name="hpn-heartbeat", daemon=True)
    thread.start()
    return thread
