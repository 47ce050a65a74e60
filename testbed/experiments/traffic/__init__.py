"""The one list of traffic kinds: an experiment file's [[traffic]] tables offer exactly these, its
schema (docs/experiment.schema.json $defs.traffic) and docs/experiments.md list them. A new kind
is one module (a dataclass, as testbed/experiments/traffic/kind.py says) and one `register` line
here, or a `register` call of the user's own (`custom = "file.py"` in the experiment file).

    kind          Key, Traffic (a kind's declaration), Run (an item on a running emulation), Registry
    iperf3        iperf3: TCP or UDP flows, for a set time
    collectives   allreduce, reduce-scatter, all-gather, all-to-all, moe, pipeline
    load          the file's traffic on a running emulation, every item run by its kind
"""
from __future__ import annotations

from testbed.experiments.traffic.collectives import (
    AllGather,
    AllReduce,
    AllToAll,
    Moe,
    Pipeline,
    ReduceScatter,
)
from testbed.experiments.traffic.iperf3 import Iperf3
from testbed.experiments.traffic.kind import Registry, Traffic

REGISTRY = Registry()
register = REGISTRY.register
unregister = REGISTRY.unregister

register(Iperf3)
register(AllReduce)
register(ReduceScatter)
register(AllGather)
register(AllToAll)
register(Moe)
register(Pipeline)


def kinds() -> list[type[Traffic]]:
    return list(REGISTRY)


def names() -> tuple[str, ...]:
    return REGISTRY.names()


def get(name: str) -> type[Traffic]:
    """The kind called `name` (ParamError naming the known ones)."""
    return REGISTRY.get(name)


def schema() -> dict:
    """The JSON Schema of a [[traffic]] table, from the registry: docs/experiment.schema.json holds
    this under $defs.traffic (tests/unit/test_traffic_registry.py keeps the two in step)."""
    return {"type": "object", "required": ["kind"],
            "properties": {"kind": {"enum": list(names())}, "start": {"$ref": "#/$defs/seconds"}},
            "allOf": [{"if": {"properties": {"kind": {"const": k.kind}}}, "then": k.schema()}
                      for k in REGISTRY]}
