"""Named shapes of the emulated fabrics (`--preset NAME` on topo show, up and run).

`segment`: one full HPN segment at its true host-side port count (HPN sec. 4): 136 hosts (8 of
them backups) with 8 NICs each on 8 rails, every NIC dual-ported to its rail's two ToRs: 16
ToRs, 1,088 NICs, 2,176 host links, one pod. The uplink tier is scaled down from 60 x 400G per
ToR to 8 aggregation switches per plane, one uplink from every ToR to each of its plane's 8,
at 3,000 Gb/s each: 8 x 3,000 = 60 x 400 = 24 Tb/s, so each ToR keeps HPN's oversubscription
(27.2 / 24 = 1.133 with the backups, 1.067 without). A ToR needs 136 + 8 = 144 ports.
Rates: 0.001 Mbit/s per paper Gb/s (a 200G host port becomes 0.2 Mbit/s): with every NIC of
the segment sending, the fabric's packets per second stay within what the userspace datapath
forwards on 2 cores.
"""
from __future__ import annotations

from testbed.core.errors import ParamError

PRESETS: dict[str, dict[str, dict[str, object]]] = {
    "hpn": {
        "segment": {"pods": 1, "segments": 1, "hosts": 136, "backup_hosts": 8, "nics": 8,
                    "rails": 8, "aggs_per_plane": 8, "uplink_gbps": 3000, "radix": 144,
                    "scale": 0.001},
    },
}


def preset(family: str, name: str | None) -> dict[str, object]:
    """The settings of preset `name` for `family` ({} for None); ParamError naming the choices."""
    if name is None:
        return {}
    known = PRESETS.get(family, {})
    if name not in known:
        raise ParamError(f"no preset {name!r} for {family}; "
                         + (f"choose from {', '.join(known)}" if known else "it has none"))
    return dict(known[name])
