"""Integration fixtures: one emulation per family and module, torn down and checked for leftovers."""
from __future__ import annotations

import os

import pytest

from testbed.emulation import runstate
from testbed.emulation.build import Emulation, Options
from testbed.model import make_fabric


def leftovers(emu: Emulation) -> list[str]:
    """What of this run still exists after teardown (must be nothing)."""
    left = []
    names = set(os.listdir("/sys/class/net"))
    left += [f"interface {i}" for i in emu.root_intfs() if i in names]
    left += [f"bridge {b}" for b in runstate.tagged_bridges(emu.run_id)]
    left += [f"bridge {b}" for b in set(emu.fabric.switches) & runstate.all_bridges()]
    if emu.state.dir.exists():
        left.append(f"run state {emu.state.dir}")
    left += [f"process {pid} ({marker})" for pid, marker in emu.state.live_processes()]
    return left


@pytest.fixture
def up():
    """up(family, **settings) -> a running Emulation; torn down and checked after the test."""
    started = []

    def start(family, routing=None, **settings):
        emu = Emulation(make_fabric(family, settings), Options(routing=routing or {}))
        started.append(emu)
        emu.__enter__()
        return emu
    yield start
    for emu in started:
        emu.stop()
        assert not leftovers(emu), f"left behind: {leftovers(emu)}"


@pytest.fixture(scope="module")
def family_up(request):
    emu = Emulation(make_fabric(request.param))
    with emu:
        yield emu
    assert not leftovers(emu), f"left behind: {leftovers(emu)}"
