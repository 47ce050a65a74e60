"""C13 on real OVS: a rail-only fabric passes its bring-up checks and has no path between rails in
a pod; the rail-only scenario reproduces, at its defaults and with four NICs per host."""
import json
from pathlib import Path

import pytest

from testbed.measure import bringup
from testbed.workload import traffic

from .conftest import run_until_valid, sets

pytestmark = pytest.mark.integration


def test_railonly_passes_its_checks_and_keeps_rails_apart(up):
    emu = up("railonly")
    results = bringup.run_all(emu)
    assert [c.name for c in results] == ["wiring", "reachability", "top-tier TCP", "bond spreading"]
    assert all(c.passed for c in results), [c.detail for c in results if not c.passed]
    assert next(c for c in results if c.name == "reachability").figures["cross_rail"] == 0
    a, b, c = (emu.fabric.nic(n) for n in ("p0s0h0-n0", "p0s1h0-n1", "p0s1h0-n0"))
    assert not emu.fabric.reachable(a, b)                # another rail: no path in the model ...
    assert traffic.ping_all(emu, [(a, b), (a, c)]) == {(a.ip, b.ip): False, (a.ip, c.ip): True}


def run_quick(tmp_path, *settings):
    """`run rail-only --quick`, again (at most 3 times) only when a busy CPU made it invalid."""
    proc, (result,) = run_until_valid("rail-only", "--quick", "--out", str(tmp_path), *sets(*settings),
                                      timeout=300)
    return proc, result


@pytest.mark.parametrize("settings", [(), ("nics=4",)], ids=["defaults", "nics=4"])
def test_rail_only_quick_run_reproduces(tmp_path, settings):
    proc, result = run_quick(tmp_path, *settings)
    assert result["verdict"] == "reproduced", result["measured"] + json.dumps(result["figures"])[:2000]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert Path(result["files"]["png"]).is_file()
    no_relay = result["figures"]["railonly"]["no relay"]
    assert no_relay["routed"] == no_relay["completed"] == 0       # cross-rail: nothing gets through
    assert result["figures"]["hpn"]["no relay"]["completed"] == no_relay["total"]
