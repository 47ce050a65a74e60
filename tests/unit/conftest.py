"""Helpers the unit tests share (test modules cannot import each other: pytest.ini), and the
guard every unit test runs under: nothing it starts may reach this machine's network."""
import json
import os
import re
import subprocess

import pytest

# Programs that read or change Open vSwitch, interfaces, routes, queues or firewall tables.
MACHINE_TOOLS = ("ovs-vsctl", "ovs-ofctl", "ovs-appctl", "ovs-dpctl", "ovsdb-client", "ip", "tc",
                 "nft", "ethtool", "mnexec", "brctl")
ASKS_NOTHING = (["--help"], ["--version"], ["-V"])   # a program's usage or version: allowed
_TOOL = "|".join(re.escape(t) for t in MACHINE_TOOLS)
# ... at a command's position in a shell script: its start, or after a newline, ;, &, |, (,
# `exec ` or `sudo `, with or without a directory
_AT_COMMAND = re.compile(rf"(?:^|[\n;&|(]|\bexec |\bsudo )\s*(?:\S*/)?({_TOOL})(?=\s|$)")
SHELLS = ("sh", "bash", "dash")


class MachineTouched(BaseException):
    """A unit test started a program that acts on this machine's network (MACHINE_TOOLS)."""


def machine_tool(args) -> str | None:
    """The MACHINE_TOOLS program `args` (a Popen argv, or a shell string) would run, if any:
    the program itself, or one a shell's `-c` script runs."""
    if isinstance(args, (str, bytes, os.PathLike)):
        scripts = [os.fsdecode(args)]
    else:
        argv = [os.fsdecode(a) for a in args]
        program = os.path.basename(argv[0]) if argv else ""
        if program in MACHINE_TOOLS and argv[1:] not in ASKS_NOTHING:
            return program
        scripts = argv[argv.index("-c") + 1:][:1] if program in SHELLS and "-c" in argv else []
    found = next(filter(None, (_AT_COMMAND.search(s) for s in scripts)), None)
    return found.group(1) if found else None


class _GuardedPopen(subprocess.Popen):
    def __init__(self, args, *rest, **kwargs):
        tool = machine_tool(args)
        if tool:
            raise MachineTouched(f"a unit test ran {tool}: {args!r:.300}")
        super().__init__(args, *rest, **kwargs)


@pytest.fixture(autouse=True)
def machine_untouched(monkeypatch):
    """Every unit test: a process that would act on Open vSwitch or the kernel's network
    (MACHINE_TOOLS) raises MachineTouched instead of starting. A patch that misses (a function
    imported by name into another module keeps the original) once let `teardown.clean()`, in a
    unit test, delete the bridges of a fabric running beside the tests."""
    monkeypatch.setattr(subprocess, "Popen", _GuardedPopen)


def put(path: str, value):
    """A change to recorded figures: the value at a dotted path ("dual_tor.loss", "rows.1.error")."""
    def change(figures):
        *parents, last = path.split(".")
        node = figures
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[int(last) if isinstance(node, list) else last] = value
    return change


class Tripped(BaseException):
    """Something ran that bad input must never reach."""


def trip_past_checks(monkeypatch) -> None:
    """For the fuzz tests' in-process CLI runs: building an Emulation, creating a run, running a
    scenario or starting any process raises Tripped (which no handler of the CLI catches), and
    the CLI leaves pytest's signal handlers alone."""
    import scenarios
    from testbed.core import interrupts
    from testbed.emulation import build
    from testbed.emulation.run import runstate
    from testbed.scenario.base import Scenario
    scenarios.all_scenarios()            # import them before processes are forbidden

    def tripwire(*args, **kwargs):
        raise Tripped("bad input got past the checks")
    for owner, name in ((build.Emulation, "__init__"), (build.Emulation, "start"),
                        (runstate.RunState, "create"), (Scenario, "execute"),
                        (subprocess, "Popen"), (subprocess, "run")):
        monkeypatch.setattr(owner, name, tripwire)
    monkeypatch.setattr(interrupts, "install", lambda: None)


def fake_run(root) -> None:
    """A running hpn fabric's state under `root`, owned by our parent process (so `trace` takes
    it as live): every case is refused before any host or switch is asked."""
    from testbed.emulation.run import processes, runstate
    run = root / "fake"
    run.mkdir(parents=True)
    parent = os.getppid()
    (run / "state.json").write_text(json.dumps({
        "owner": [parent, processes.start_time(parent)], "pids": [], "bridges": [], "root_intfs": [],
        "nft_tables": [], "dirs": [], "hosts": {}}))
    (run / "spec.json").write_text(json.dumps({"family": "hpn", "params": {}}))
    assert [s.run_id for s in runstate.runs() if runstate.alive(s)] == ["fake"]


def snapshot_registries():
    """Every registry a plug-in can add to, and the plug-in loader's memory, as they are now:
    call the returned function to put them back (what a test's plug-ins registered is gone)."""
    from testbed.core import entrypoints, plugins
    from testbed.emulation.faults import registry as fault_registry
    from testbed.model import families
    from testbed.model.policies import registry as policy_registry
    from testbed.scenario import registry as scenario_registry
    saved = [(d, dict(d)) for d in (families.FAMILIES, scenario_registry.PLUGGED,
                                    policy_registry._POLICIES, fault_registry.REGISTRY.kinds,
                                    plugins._loaded, plugins._digests)]
    done = set(entrypoints._done)

    def restore():
        for d, before in saved:
            d.clear()
            d.update(before)
        entrypoints._done.clear()
        entrypoints._done.update(done)
    return restore


@pytest.fixture
def registries_restored():
    """Whatever a test's plug-ins (files, entry points) register is gone after it."""
    restore = snapshot_registries()
    yield
    restore()
