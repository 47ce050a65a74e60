"""The one way scenarios and the CLI make an Emulation: on this machine, or across the servers
they name (`run --servers`, `up --servers`; cluster/site.py).

    with make_emulation(fab, Options()) as emu: ...                          # this machine
    with make_emulation(fab, Options(), servers=["hpn-srv1", "hpn-srv2"]) as emu: ...

The choice is an argument, never a global: a scenario passes its own `servers` (Scenario.servers,
which `run --servers` sets).
"""
from __future__ import annotations

from collections.abc import Iterable

from testbed.emulation.build import Emulation, Options
from testbed.emulation.site import LocalSite, Site
from testbed.model.fabric import Fabric


def make_site(fabric: Fabric, servers: Iterable[str] | None = ()) -> Site:
    """Where `fabric` runs: this machine (no servers), or across `servers` (ParamError before
    anything exists when the placement cannot put it there)."""
    servers = tuple(servers or ())
    if not servers:
        return LocalSite(fabric)
    from testbed.emulation.cluster.site import ClusterSite  # Mininet Cluster Edition: only when asked
    return ClusterSite(fabric, servers)


def make_emulation(fabric: Fabric, options: Options | None = None,
                   servers: Iterable[str] | None = ()) -> Emulation:
    """An Emulation on this machine, or on a ClusterSite across `servers`."""
    return Emulation(fabric, options, site=make_site(fabric, servers))
