"""The file's traffic on a running emulation: each item run by its kind (Traffic.runner), prepared
before the experiment's clock starts (iperf3's servers), begun at its `start`, waited for."""
from __future__ import annotations


class Load:
    def __init__(self, emu, spec):
        self.runs = [(t, t.runner(emu, n)) for n, t in enumerate(spec.traffic)]

    def servers(self) -> None:
        for _, run in self.runs:
            run.prepare()

    def schedule(self, timeline):
        """Every item on `timeline` (testbed.scenario.timeline.Schedule): each begins at its `start`."""
        for t, run in self.runs:
            timeline.action(t.start, run.begin)
        return timeline

    def wait(self) -> list[dict]:
        """Every item's results, in the file's order; the first error is raised once all ended."""
        results, error = [], None
        for _, run in self.runs:
            try:
                results += run.wait()
            except BaseException as e:  # noqa: BLE001 (raised below, once every item is waited for)
                error = error or e
        if error is not None:
            raise error
        return results
