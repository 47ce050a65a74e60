"""Collective traffic: one kind per pattern of testbed.workload.collectives, each run in a thread
from its `start` until its bytes are delivered (its length is not known in advance), its result
the collective's summary (bus bandwidth: an [[expect]] busbw)."""
from __future__ import annotations

import threading
from dataclasses import dataclass

from testbed.core.errors import ParamError
from testbed.experiments.traffic.kind import GROUPS, NAMES, Run, Traffic, key
from testbed.workload import collectives as C

HOSTS = "the hosts taking part (default: every host)"
SIZE = "bytes per rank"


@dataclass(frozen=True, kw_only=True)
class Collective(Traffic):
    """A collective: a subclass sets `kind`, `help`, its keys and `collective`."""
    busbw = True
    pace: float = key(float, "pace at this fraction of the fair share (0: unpaced)", 0.0, bounds=(0.0, 1.0))

    def collective(self, fab, job: str):
        """The model's Collective (its own checks: ParamError)."""
        raise NotImplementedError

    def check(self, fab, fail) -> None:
        try:
            self.collective(fab, f"{self.kind}-0")
        except ParamError as e:
            fail(None, str(e))

    def runner(self, emu, n: int) -> Job:
        return Job(emu, self, self.collective(emu.fabric, f"{self.kind}-{n}"))


@dataclass(frozen=True, kw_only=True)
class PerRank(Collective):
    """A collective over `hosts` (every NIC a rank), `size` bytes per rank."""
    hosts: tuple[str, ...] = key(NAMES, HOSTS, ())
    size: int = key(int, SIZE, 1_000_000, bounds=(1, 10**10))


@dataclass(frozen=True, kw_only=True)
class AllReduce(PerRank):
    kind, help = "allreduce", "a ring all-reduce (reduce-scatter, then all-gather)"

    def collective(self, fab, job: str):
        return C.ring_allreduce(fab, list(self.hosts) or None, self.size, job=job)


@dataclass(frozen=True, kw_only=True)
class ReduceScatter(PerRank):
    kind, help = "reduce-scatter", "a ring reduce-scatter"

    def collective(self, fab, job: str):
        return C.reduce_scatter(fab, list(self.hosts) or None, self.size, job=job)


@dataclass(frozen=True, kw_only=True)
class AllGather(PerRank):
    kind, help = "all-gather", "a ring all-gather"

    def collective(self, fab, job: str):
        return C.all_gather(fab, list(self.hosts) or None, self.size, job=job)


@dataclass(frozen=True, kw_only=True)
class AllToAll(PerRank):
    kind, help = "all-to-all", "an all-to-all, every rank to every other"

    def collective(self, fab, job: str):
        return C.all_to_all(fab, list(self.hosts) or None, self.size, job=job)


@dataclass(frozen=True, kw_only=True)
class Moe(Collective):
    kind, help = "moe", "a mixture-of-experts all-to-all (dispatch and combine)"
    hosts: tuple[str, ...] = key(NAMES, HOSTS, ())
    tokens: int = key(int, "tokens per GPU (NIC)", 16, bounds=(1, 10_000))
    m: int = key(int, "nodes each token is routed to (node-limited routing)", 4, bounds=(1, 255))

    def collective(self, fab, job: str):
        return C.moe_all_to_all(fab, list(self.hosts) or None, tokens=self.tokens, m=self.m, job=job)


@dataclass(frozen=True, kw_only=True)
class Pipeline(Collective):
    kind, help = "pipeline", "pipeline-parallel sends from each stage to the next"
    stages: tuple[tuple[str, ...], ...] = key(GROUPS, "the stages in order, each a list of hosts")
    size: int = key(int, SIZE, 1_000_000, bounds=(1, 10**10))

    def collective(self, fab, job: str):
        return C.pipeline(fab, [list(s) for s in self.stages], self.size, job=job)


class Job(Run):
    """A collective in a thread from its `start`; `wait` joins it (its error raised here)."""

    def __init__(self, emu, t: Collective, coll):
        self.emu, self.t, self.coll, self.result = emu, t, coll, None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def begin(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        try:
            (run,) = C.run(self.emu, self.coll, pace=self.t.pace)
            self.result = {"where": self.t.where, **run.summary()}
        except BaseException as e:  # noqa: BLE001 (re-raised in the main thread by `wait`)
            self.result = e

    def wait(self) -> list[dict]:
        if self.thread.ident is None:        # never begun
            return []
        self.thread.join()
        if isinstance(self.result, BaseException):
            raise self.result
        return [self.result]
