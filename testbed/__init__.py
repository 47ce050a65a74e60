"""hpn-testbed: emulate the networks that train large language models on Mininet and Open vSwitch.

The stable Python API (docs/api.md) is what `from testbed import NAME` gives, for the names in
`__all__`: build a fabric (make_fabric), bring it up (make_emulation, Options), inject faults
(Faults), drive traffic (Flow, run_flows, ping_all), run your own distributed programs (Job,
run_job), measure (port_bytes, Sampler, run_checks), and register your own families, policies,
fault kinds and scenarios. Each name is imported on
first use, so `import testbed` stays cheap (the CLI's start, the controller's); the modules
behind them may move, these names do not.

    from testbed import Faults, make_emulation, make_fabric, run_checks
    fab = make_fabric("hpn", {"hosts": 2})                 # pure: checked, nothing built
    with make_emulation(fab) as emu, Faults(emu) as faults:   # needs root; torn down on exit
        assert all(c.passed for c in run_checks(emu))
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# name -> (module, attribute): the stable surface, one line each
_EXPORTS: dict[str, tuple[str, str]] = {
    # errors: bad input (exit 2, nothing built), run-time failures (exit 1)
    "ParamError": ("testbed.core.errors", "ParamError"),
    "TestbedError": ("testbed.core.errors", "TestbedError"),
    # the pure model
    "Fabric": ("testbed.model.fabric", "Fabric"),
    "Family": ("testbed.model.families", "Family"),
    "Params": ("testbed.model.params", "Params"),
    "make_fabric": ("testbed.model.families", "make_fabric"),
    "register_family": ("testbed.model.families", "register"),
    "RoutingPolicy": ("testbed.model.policies", "RoutingPolicy"),
    "register_policy": ("testbed.model.policies", "register"),
    "Route": ("testbed.model.routing", "Route"),
    "Number": ("testbed.model.policies.base", "Number"),
    # writing a family (docs/extending.md): its counts and its full-scale budget
    "Size": ("testbed.model.limits", "Size"),
    "Budget": ("testbed.model.families.family", "Budget"),
    # plug-ins
    "load_plugin": ("testbed.core.plugins", "load"),
    # a running fabric
    "Options": ("testbed.emulation.build", "Options"),
    "Emulation": ("testbed.emulation.build", "Emulation"),
    "make_emulation": ("testbed.emulation.factory", "make_emulation"),
    # faults
    "Faults": ("testbed.emulation.faults.inject", "Faults"),
    "FaultKind": ("testbed.emulation.faults.kinds", "FaultKind"),
    "FaultArg": ("testbed.emulation.faults.kinds", "Arg"),
    "register_fault_kind": ("testbed.emulation.faults.registry", "register"),
    # traffic
    "Flow": ("testbed.workload.traffic", "Flow"),
    "run_flows": ("testbed.workload.traffic", "run_flows"),
    "received_mbps": ("testbed.workload.traffic", "received_mbps"),
    "ping_all": ("testbed.workload.traffic", "ping_all"),
    # your own distributed programs (docs/jobs.md)
    "Job": ("testbed.workload.jobs", "Job"),
    "run_job": ("testbed.workload.jobrun", "run_job"),
    # measures
    "port_bytes": ("testbed.measure.meters", "port_bytes"),
    "Sampler": ("testbed.emulation.net.counters", "Sampler"),
    "run_checks": ("testbed.measure.bringup", "run_all"),
    # scenarios
    "Scenario": ("testbed.scenario.base", "Scenario"),
    "Knobs": ("testbed.scenario.knobs", "Knobs"),
    "Judgement": ("testbed.scenario.base", "Judgement"),
    "verdict": ("testbed.scenario.base", "verdict"),
    "register_scenario": ("testbed.scenario.catalog", "register"),
}

__all__ = ["Budget", "Emulation", "Fabric", "Family", "FaultArg", "FaultKind", "Faults", "Flow",
           "Job", "Judgement", "Knobs", "Number", "Options", "ParamError", "Params", "Route",
           "RoutingPolicy", "Sampler", "Scenario", "Size", "TestbedError", "load_plugin",
           "make_emulation", "make_fabric", "ping_all", "port_bytes", "received_mbps",
           "register_family", "register_fault_kind", "register_policy", "register_scenario",
           "run_checks", "run_flows", "run_job", "verdict"]
# (__all__ is sorted(_EXPORTS), written out for linters: tests/unit/test_api.py holds them equal)


def __getattr__(name: str):
    """Import an exported name on first use (PEP 562), then keep it here."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'testbed' has no attribute {name!r}")
    module, attr = _EXPORTS[name]
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:    # what type checkers and editors see: the same names, eagerly
    from testbed.core.errors import ParamError, TestbedError
    from testbed.core.plugins import load as load_plugin
    from testbed.emulation.build import Emulation, Options
    from testbed.emulation.factory import make_emulation
    from testbed.emulation.faults.inject import Faults
    from testbed.emulation.faults.kinds import Arg as FaultArg
    from testbed.emulation.faults.kinds import FaultKind
    from testbed.emulation.faults.registry import register as register_fault_kind
    from testbed.emulation.net.counters import Sampler
    from testbed.measure.bringup import run_all as run_checks
    from testbed.measure.meters import port_bytes
    from testbed.model.fabric import Fabric
    from testbed.model.families import Family, make_fabric
    from testbed.model.families import register as register_family
    from testbed.model.params import Params
    from testbed.model.policies import RoutingPolicy
    from testbed.model.policies import register as register_policy
    from testbed.scenario.base import Judgement, Scenario, verdict
    from testbed.scenario.catalog import register as register_scenario
    from testbed.scenario.knobs import Knobs
    from testbed.workload.jobrun import run_job
    from testbed.workload.jobs import Job
    from testbed.workload.traffic import Flow, ping_all, received_mbps, run_flows
