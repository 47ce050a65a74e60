"""The `routing` options of a run, checked and completed with their defaults."""
from __future__ import annotations

from testbed.core.errors import ParamError
from testbed.model import families
from testbed.model.fabric import Fabric
from testbed.model.routing import ECMP_MODES

POLICIES = ("ecmp", "static", "adaptive")
CORE_MODES = ("per-port", "ecmp")


def check_core_applies(fabric: Fabric, core: object) -> None:
    """`core` chooses how core switches forward: refuse it where there are none (mpft and mrft
    are two-tier; hpn has its core only with more than one pod)."""
    if not any(s.role == "core" for s in fabric.switches.values()):
        raise ParamError(f"routing core={core!r}: this {fabric.family} fabric has no core tier "
                         "(hpn with pods > 1 and clos3 have one)")


def normalize(fabric: Fabric, routing: dict | None) -> dict:
    """The routing options with defaults filled in; ParamError naming a bad one.

    Keys: ecmp (polarized|seeded), core (per-port|ecmp), policy (ecmp|static|adaptive),
    matrix ([[src, dst], ...] NIC references, for static), interval (s, adaptive poll period),
    hot (fraction of a link's rate above which it is hot), elephant (fraction of a link's rate
    from which a flow counts), hold (s a moved flow stays put).
    """
    r = dict(routing or {})
    known = {"ecmp", "core", "policy", "matrix", "interval", "hot", "elephant", "hold"}
    unknown = set(r) - known
    if unknown:
        raise ParamError(f"unknown routing option {sorted(unknown)[0]!r}; known: {', '.join(sorted(known))}")
    if "core" in r:
        check_core_applies(fabric, r["core"])
    r.setdefault("ecmp", "seeded")
    r.setdefault("core", families.of(fabric).default_core)
    r.setdefault("policy", "ecmp")
    for key, choices in (("ecmp", ECMP_MODES), ("core", CORE_MODES), ("policy", POLICIES)):
        if r[key] not in choices:
            raise ParamError(f"routing {key}={r[key]!r}: choose from {', '.join(choices)}")
    matrix = []
    pairs = r.get("matrix") or []
    if not isinstance(pairs, (list, tuple)):
        raise ParamError("routing matrix: expected [[src, dst], ...]")
    for pair in pairs:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or \
                not all(isinstance(x, str) for x in pair):
            raise ParamError(f"routing matrix entry {str(pair)[:60]}: expected [src, dst] NIC names")
        src, dst = fabric.nic(pair[0]), fabric.nic(pair[1])   # ParamError if unknown
        if src == dst:
            raise ParamError(f"routing matrix entry {pair[0]},{pair[1]}: a flow from a NIC to itself")
        matrix.append([src.ip, dst.ip])
    r["matrix"] = matrix
    if matrix and r["policy"] != "static":
        raise ParamError("a traffic matrix only applies to policy=static")
    for key, default, lo, hi in (("interval", 0.5, 0.05, 60), ("hot", 0.8, 0.05, 1.5),
                                 ("elephant", 0.1, 0.0, 1.0), ("hold", 2.0, 0.0, 600)):
        try:
            value = float(r.get(key, default))
        except (TypeError, ValueError):
            raise ParamError(f"routing {key}={r.get(key)!r}: expected a number") from None
        if not lo <= value <= hi:
            raise ParamError(f"routing {key}={value}: must be between {lo} and {hi}")
        r[key] = value
    return r
