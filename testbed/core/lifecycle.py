"""Things that start and stop: a `with` block starts them and always stops them."""
from __future__ import annotations


class Lifecycle:
    """Subclasses define start() and stop(); stop() must cope with a half-done start()."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        try:
            self.start()
        except BaseException:   # Ctrl-C in the middle of a start too: undo what it began
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
