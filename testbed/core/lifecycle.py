"""Things that start and stop: a `with` block starts them and always stops them."""
from __future__ import annotations

from contextlib import nullcontext

from testbed.core import progress


class Lifecycle:
    """Subclasses define start() and stop(); stop() must cope with a half-done start().
    `starting`: the name of the phase a long start() shows as progress (None: none)."""
    starting: str | None = None

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        try:
            with progress.phase(self.starting) if self.starting else nullcontext():
                self.start()
        except BaseException:   # Ctrl-C in the middle of a start too: undo what it began
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
