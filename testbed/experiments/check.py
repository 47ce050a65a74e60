"""An experiment file's tables, each checked against the fabric model (pure): `load(path) -> Spec`."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from testbed.core import files
from testbed.core.errors import ParamError
from testbed.experiments import expect, limits
from testbed.experiments import traffic as traffic_kinds
from testbed.experiments.jobtables import read_jobs
from testbed.experiments.spec import (
    MEASURE_KEYS,
    ROUTING_KEYS,
    SECONDS,
    TOP_KEYS,
    Fault,
    Reader,
    Spec,
    parse,
    tables,
)


@dataclass(frozen=True)
class Watched:
    """A throughput item: what it is and the root-namespace interfaces whose counters give its two
    directions (rx on a link's upper end is what went up it, tx what came down)."""
    name: str
    what: str                     # host | nic | link
    intfs: tuple[str, ...]
    directions: tuple[str, str]   # names of (rx, tx) on those interfaces


MAX_TRAFFIC = 256
COLLECTIVE_FAULT_S = 120.0


def load(path: str) -> Spec:
    data, locator = parse(path)
    top = Reader(path, locator, "", 1, data, TOP_KEYS)

    def reader(table: str, index: int, value, allowed) -> Reader:
        return Reader(path, locator, table, index, value, allowed)

    load_custom(top)
    fab, family, settings = read_fabric(reader("fabric", 1, top.get("fabric", dict, required=True), None))
    table = top.get("routing", dict, {})
    routing, detector = read_routing(reader("routing", 1, table, ROUTING_KEYS + policy_keys(table)), fab)
    jobs = read_jobs(top, fab)
    entries = tables(top, "traffic")
    if not entries and not jobs:
        top.fail(None, "at least one [[traffic]] or [[job]] is required")
    if len(entries) > MAX_TRAFFIC:     # each takes 20 server ports from 5201: they must stay ports
        top.fail("traffic", f"{len(entries)} [[traffic]] entries: at most {MAX_TRAFFIC}")
    traffic = tuple(read_traffic(reader("traffic", i, t, None), fab) for i, t in enumerate(entries, 1))
    faults = tuple(read_fault(reader("fault", i, f, fault_keys()), fab)
                   for i, f in enumerate(tables(top, "fault"), 1))
    measure = reader("measure", 1, top.get("measure", dict, {}), MEASURE_KEYS)
    name = top.get("name", str, Path(path).stem)
    if files.name_problem(name):     # it names NAME.json and NAME.png under --out
        top.fail("name", f"{name!r} {files.name_problem(name)}; it names the report files")
    throughput = measure.names("throughput", default_watch(traffic, jobs, fab))
    parts = {"fabric": fab, "throughput": throughput, "traffic": traffic, "faults": faults}
    expects = tuple(expect.read(reader("expect", i, e, expect.EXPECT_KEYS), parts)
                    for i, e in enumerate(tables(top, "expect"), 1))
    rtt, gaps = probes(fab, measure, "rtt", expects), probes(fab, measure, "failover_gap", expects)
    spec = Spec(path, name, top.get("description", str, ""), family,
                settings, routing, detector, traffic, faults, throughput=throughput,
                queues=measure.names("queues"), rtt=rtt, gaps=gaps, expects=expects,
                warm=measure.get("warm", float, 1.5, bounds=(0.0, 600.0)),
                settle=measure.get("settle", float, 0.5, bounds=(0.0, 60.0)),
                interval=measure.get("interval", float, 0.1, bounds=(0.02, 5.0)), jobs=jobs, fabric=fab)
    for item in spec.throughput:
        watched(fab, item, measure, "throughput")
    for port in spec.queues:
        switch_port(fab, port, measure, "queues")
    check_timing(spec, top)
    limits.check(spec, top)
    return spec


def probes(fab, measure: Reader, key: str, expects) -> tuple[tuple[str, str], ...]:
    """The NIC pairs [measure] `key` lists, checked, then those the expect clauses of that
    measure name (each pair once)."""
    listed = measure.pairs(key)
    nics = {n.name: n for n in fab.nics()}
    for src, dst in listed:
        for name in (src, dst):
            if name not in nics:
                measure.fail(key, f"no NIC {name!r} in this {fab.family} fabric (HOST-nI)")
        if nics[src].host == nics[dst].host:
            measure.fail(key, f"{src} -> {dst}: a probe crosses the fabric: two NICs of different hosts")
    return tuple(dict.fromkeys([*listed, *(e.pair for e in expects if e.measure == key)]))


def key_in(message: str, keys) -> str | None:
    """The key a model error names (`hosts=0: ...`, `unknown parameter 'x'`), if it is one of `keys`."""
    match = re.match(r"^(?:routing )?(\w+)=", message) or re.search(r"parameter '(\w+)'", message)
    return match.group(1) if match and match.group(1) in keys else None


def load_custom(top: Reader) -> None:
    """`custom = "file.py"` (or a list): plug-ins run before the fabric is read, so the families
    (and other kinds) they register can be named; each path is relative to the experiment file."""
    from testbed.core import plugins
    value = top.data.get("custom", [])
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        top.fail("custom", "expected a plug-in file (FILE.py) or a list of them")
    for name in names:
        full = str(Path(top.path).parent / name)
        try:
            plugins.load(full)
        except ParamError as e:
            top.fail("custom", str(e).replace(full, name, 1))


def read_fabric(r: Reader):
    from testbed.model import make_fabric
    from testbed.model.families import get, registered
    family = r.get("family", str, required=True, choices=list(registered()))
    name = r.get("preset", str)
    settings = {k: v for k, v in r.data.items() if k not in ("family", "preset")}
    try:
        return make_fabric(family, {**get(family).preset(name), **settings}), family, settings
    except ParamError as e:
        r.fail(key_in(str(e), settings) or ("preset" if name and "preset" in str(e) else None), str(e))


def policy_keys(table: dict) -> tuple[str, ...]:
    """The options of the policy a [routing] table names (none if it names none or an unknown
    one: read_routing then says what is wrong)."""
    from testbed.model.policies import registry
    try:
        policy = registry.get(table.get("policy", registry.names()[0]))
    except ParamError:
        return ()
    return tuple(o.name for o in policy.options if o.name != "matrix")


def read_routing(r: Reader, fab) -> tuple[dict, bool]:
    from testbed.model.policies import normalize
    routing = {k: r.get(k, str) for k in ("ecmp", "policy", "core") if k in r.data}
    routing.update({k: v for k, v in r.data.items() if k not in ROUTING_KEYS})   # the policy's own
    if "matrix" in r.data:
        routing["matrix"] = r.get("matrix", list)
        if not all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
                   for p in routing["matrix"]):
            r.fail("matrix", "expected [[SRC, DST], ...] pairs of NIC names")
    try:
        normalize(fab, routing)
    except ParamError as e:
        r.fail(key_in(str(e), routing) or ("matrix" if "matrix" in str(e) else None), str(e))
    from testbed.model import families
    if routing.get("core") == "per-port" and families.of(fab).default_core != "per-port":
        r.fail("core", f"'per-port': per-port core rules are HPN's (claim C8); {fab.family} hashes "
                       "at every tier (core = \"ecmp\")")
    detector = r.get("detector", bool, False)
    if detector and not any(len(n.ports) > 1 for n in fab.nics()):
        r.fail("detector", f"the detector watches the ports of dual-ported NICs; this {fab.family} "
                           "fabric has none (hpn and railonly, without single_tor, have them)")
    return routing, detector


def read_traffic(r: Reader, fab):
    """A [[traffic]] table: `kind` (a registered traffic kind), then the kind reads its own keys."""
    names = traffic_kinds.names()
    if "kind" not in r.data:
        r.fail(None, f"kind is required: one of {', '.join(names)}")
    return traffic_kinds.get(r.get("kind", str, choices=names)).read(r, fab)


def read_fault(r: Reader, fab) -> Fault:
    """A [[fault]] table: `kind` (a registered fault kind), `at`, `for` unless the kind times
    itself, and the kind's own arguments, read by the kind (the checks the CLI's `fault` makes)."""
    from testbed.emulation.faults import registry as fault_registry
    from testbed.emulation.faults.kinds import FILE_KEYS, ArgProblem
    kind = fault_registry.get(r.get("kind", str, required=True, choices=fault_registry.REGISTRY.names()))
    at = r.get("at", float, required=True, bounds=SECONDS)
    given = {k: v for k, v in r.data.items() if k not in FILE_KEYS}
    try:
        args = kind.read(given, fab)
    except ArgProblem as e:
        r.fail(e.key, e.problem)
    if kind.lasts(args) is not None:
        if "for" in r.data:
            r.fail("for", f"not a key of a {kind.name} fault; it lasts {kind.lasts(args):g} s by itself")
        return Fault(kind.name, at, r.where, tuple(args.items()))
    seconds = r.get("for", float, required=True, bounds=(0.1, 3600.0))
    return Fault(kind.name, at, r.where, tuple(args.items()), seconds=seconds)


def fault_keys() -> tuple[str, ...]:
    """Every key a [[fault]] table may have: the file's own and every registered kind's arguments."""
    from testbed.emulation.faults import registry as fault_registry
    from testbed.emulation.faults.kinds import FILE_KEYS
    return tuple(dict.fromkeys([*FILE_KEYS, *(a.name for k in fault_registry.kinds() for a in k.args)]))


def link_of(fab, intf: str, r: Reader | None = None, key: str = "port"):
    """The cable an interface (a host port, or SWITCH-ethN) belongs to."""
    for link in fab.links:
        if intf in (link.a_intf, link.b_intf):
            return link
    if r is None:
        raise ParamError(f"no port {intf!r} in this {fab.family} fabric")
    r.fail(key,
           f"no port {intf!r} in this {fab.family} fabric (a host port such as HOST-n0p0, or SWITCH-ethN)")


def switch_port(fab, intf: str, r: Reader, key: str) -> str:
    """A switch's egress interface, where a link's queue builds."""
    link = link_of(fab, intf, r, key)
    if intf == link.a_intf and link.a not in fab.switches:
        r.fail(key, f"{intf!r} is a host port: a queue is measured on a switch's port (SWITCH-ethN)")
    return intf


def watched(fab, item: str, r: Reader | None = None, key: str = "throughput") -> Watched:
    if item in fab.hosts:
        return Watched(item, "host", tuple(l.b_intf for l in fab.host_links() if l.a == item),
                       ("sent", "received"))
    nic = next((n for n in fab.nics() if item == n.name), None)
    if nic is not None:
        return Watched(item, "nic", tuple(l.b_intf for l in fab.host_links() if l.a_intf in nic.ports),
                       ("sent", "received"))
    link = link_of(fab, item, r, key)
    return Watched(item, "link", (link.b_intf,), (f"{link.a}->{link.b}", f"{link.b}->{link.a}"))


def default_watch(items, jobs=(), fab=None) -> tuple[str, ...]:
    """With no [measure] throughput: what the traffic items watch by themselves (iperf3's
    senders), and the NIC of each [[job]]'s rank 0."""
    from testbed.workload.jobs import place
    return tuple(dict.fromkeys([*(w for t in items for w in t.watched()),
                                *(place(job, fab)[0].nic for job in jobs)]))


def check_timing(spec: Spec, top: Reader) -> None:
    """Faults after the warm-up and, where timed traffic runs (iperf3, with or without collectives
    alongside), ending before the last timed item stops: else a phase has no samples. A
    collective's length is not known before it runs: with such traffic only, faults end within
    COLLECTIVE_FAULT_S (a fault at 3000 s would otherwise idle the fabric for 50 minutes)."""
    timed = [t for t in spec.traffic if t.timed]
    length = max((t.end for t in timed), default=COLLECTIVE_FAULT_S)
    sets = "/".join(dict.fromkeys(t.kind for t in timed))
    for k, f in enumerate(spec.faults, 1):
        r = Reader(spec.path, top.locator, "fault", k, {}, None)
        if timed and f.at < spec.first_start + spec.warm:
            r.fail("at", f"{f.at:g} is inside the warm-up (the traffic starts at {spec.first_start:g} s, "
                         f"then {spec.warm:g} s of [measure] warm)")
        if f.end > length:
            r.fail("at",
                   f"the fault ends at {f.end:g} s, after the traffic ({length:g} s; {sets} sets the length)"
                   if timed else f"the fault ends at {f.end:g} s: with a collective or a job, faults end "
                                 f"within {COLLECTIVE_FAULT_S:g} s (its length is not known in advance)")
