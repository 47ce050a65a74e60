"""Claim C9: a fabric miswired on purpose fails `up --check`, which names exactly the swapped
cables, from probes that went through the switches (not from the names of the veths)."""
import json
import subprocess
import sys

import pytest

from testbed.emulation.run import runstate
from testbed.model import make_fabric

pytestmark = pytest.mark.integration


def swap_pair(fab, role: str):
    """Two ports of `role` switches on two cables: the uplinks of two ToRs, or the
    downlinks of two aggregation switches."""
    if role == "tor":
        links = [l for l in fab.switch_links() if fab.switches[l.a].role == "tor"]
        x, y = links[0], links[-1]
        return (x.a_intf, y.a_intf), {frozenset((x.a_intf, y.b_intf)), frozenset((y.a_intf, x.b_intf))}
    links = [l for l in fab.switch_links() if fab.switches[l.b].role == role]
    x, y = links[0], links[-1]
    return (x.b_intf, y.b_intf), {frozenset((x.b_intf, y.a_intf)), frozenset((y.b_intf, x.a_intf))}


@pytest.mark.parametrize("role", ["tor", "agg"])
def test_up_check_names_exactly_the_two_swapped_cables(role):
    fab = make_fabric("hpn")
    (a, b), cables = swap_pair(fab, role)
    proc = subprocess.run([sys.executable, "-m", "testbed", "up", "hpn", "--miswire", f"{a},{b}",
                           "--check", "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and proc.stdout, proc.stdout + proc.stderr
    [check] = [c for c in json.loads(proc.stdout)["result"]["checks"] if c["name"] == "wiring"]
    assert not check["passed"]
    assert {frozenset(w["cable"]) for w in check["figures"]["wrong"]} == cables, check
    assert not runstate.runs()
