"""The controller's heartbeat, from its apps' own event loops: the testbed's watchdog
(testbed/emulation/control/watchdog.py) reads it to tell a controller that stopped answering
(SIGSTOP, a handler that loops or blocks) from one that is merely busy.

A thread sends each os-ken app (ours, a user's, os-ken's own) a Beat event, one at a time per app,
and each app's event loop answers it between the events it handles; the file holds the time of
the OLDEST answer still standing, so one app whose loop is stuck in a handler stops the heartbeat
even though this thread, and every other app, goes on. A thread that stamped the clock on its
own would keep beating while a handler hangs.

A handler that does long work on purpose (ours: a whole fabric's rules after a ToR fails, a
switch's tens of thousands of rules sent at its connection) says so now and then with
`working(app)`: its loop counts as answering while it makes progress. A handler that loops or
blocks never says it; an app of a user's may call it too (docs/extending.md).

The file is opened once (O_NOFOLLOW, in the run's root-only directory) and overwritten in
place with pwrite: a few bytes per beat, no path lookup, no rename.
"""
from __future__ import annotations

import os
import threading
import time


class Beat:
    """The event each app's loop answers (os-ken dispatches it by class to `Beats.answered`)."""


class Beats:
    """The apps' answers: when each app's loop last handled a Beat, and which Beat is still out."""

    def __init__(self, apps, clock=time.monotonic):
        self.apps, self.clock = list(apps), clock
        self.answered = {app.name: clock() for app in self.apps}
        self.out: set[str] = set()
        self.heads: dict[str, object] = {}     # each full queue's first event when last seen
        for app in self.apps:
            app.register_handler(Beat, lambda ev, name=app.name: self.answer(name))

    def answer(self, name: str) -> None:
        self.answered[name] = self.clock()
        self.out.discard(name)

    def working(self, name: str) -> None:
        """`name`'s handler is making progress: as good as an answer (the Beat stays out, so no
        more are queued behind it)."""
        self.answered[name] = self.clock()

    def send(self) -> None:
        """A Beat to every app that answered the last (a stuck loop's queue is not filled)."""
        for app in self.apps:
            if app.name not in self.out:
                self.out.add(app.name)          # before: the loop may answer at once
                if not offer(app, Beat()):
                    self.out.discard(app.name)  # its queue is full: next time
                    if self.moved(app):         # but its loop took events since: busy, not hung
                        self.working(app.name)
            else:
                self.heads.pop(app.name, None)

    def moved(self, app) -> bool:
        """Whether `app`'s full queue has a new first event since the last look: its loop is
        handling a flood (packet-ins faster than it drains them), which keeps every Beat out;
        a loop stuck in a handler leaves the same event first."""
        try:
            head = app.events.queue[0]
        except (AttributeError, IndexError):
            head = None
        before, self.heads[app.name] = self.heads.get(app.name), head
        return before is not None and head is not None and head is not before

    def oldest(self) -> float:
        return min(self.answered.values(), default=self.clock())


def offer(app, ev) -> bool:
    """Put `ev` in `app`'s event queue unless the queue is full (os-ken's own _send_event waits
    for room: the beating thread must never wait on one app, or the file goes stale for all)."""
    if not app._events_sem.acquire(blocking=False):
        return False
    app.events.put((ev, None))
    return True


_running: Beats | None = None      # this process's (start), for working()


def working(app) -> None:
    """Said by `app`'s handler now and then during long work: it is busy, not hung."""
    if _running is not None:
        _running.working(app.name)


def start(path, interval: float, apps) -> threading.Thread | None:
    """Beat `apps` every `interval` seconds from a daemon thread and stamp `path` with the oldest
    answer (None: no heartbeat asked)."""
    if not path:
        return None
    global _running
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    beats = _running = Beats(apps)

    def beat():
        while True:
            beats.send()
            os.pwrite(fd, f"{beats.oldest():.3f}\n".rjust(24).encode(), 0)
            time.sleep(interval)
    thread = threading.Thread(target=beat, name="hpn-heartbeat", daemon=True)
    thread.start()
    return thread
