"""The one way scenarios and the CLI make an Emulation: on this machine, or, inside
`on_servers(...)` (`run --servers`, `up --servers`), across those servers (cluster.py).

    with on_servers(["hpn-srv1", "hpn-srv2"]):
        with make_emulation(fab, Options()) as emu: ...

The servers are a context variable, so the scenarios need not pass them down.
"""
from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterable, Iterator

from testbed.emulation.build import Emulation, Options
from testbed.model.fabric import Fabric

# the servers `run --servers` chose, for every emulation the scenarios build meanwhile
_SERVERS: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("servers", default=())


@contextlib.contextmanager
def on_servers(servers: Iterable[str] | None) -> Iterator[None]:
    """Every make_emulation inside this block builds across `servers` (none: on this machine)."""
    token = _SERVERS.set(tuple(servers or ()))
    try:
        yield
    finally:
        _SERVERS.reset(token)


def make_emulation(fabric: Fabric, options: Options | None = None) -> Emulation:
    """An Emulation on this machine, or inside on_servers on a cluster.ClusterSite."""
    servers = _SERVERS.get()
    if not servers:
        return Emulation(fabric, options)
    from testbed.emulation.cluster.site import ClusterSite  # Mininet Cluster Edition: only when asked
    return Emulation(fabric, options, site=ClusterSite(fabric, servers))
