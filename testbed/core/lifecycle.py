"""Things that start and stop: a `with` block starts them and always stops them."""
from __future__ import annotations

from contextlib import nullcontext

from testbed.core import progress


class Lifecycle:
    """Subclasses define start() and stop(); stop() must cope with a half-done start().
    `starting`: the name of the phase a long start() shows as progress (None: none).
    `preflight()`: the refusals that come before anything is created, run before that phase
    shows, so a refused start prints its one line and nothing else."""
    starting: str | None = None

    def preflight(self) -> None:
        pass

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        try:
            self.preflight()
            with progress.phase(self.starting) if self.starting else nullcontext():
                self.start()
        except BaseException:   # Ctrl-C in the middle of a start too: undo what it began
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
