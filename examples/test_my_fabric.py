"""An example of a user's own CI test, using only the hpn-testbed pytest plugin (installed with
hpn-testbed: no conftest needed). Run it as root with Open vSwitch up: `pytest test_my_fabric.py`;
without them it is skipped, and under CI=true that skip fails the run."""
import pytest

from testbed.measure import bringup

# the fabric: a topology file next to this test (or a family: hpn_fabric("mpft", planes=2))
pytestmark = pytest.mark.hpn_fabric(topology="three-tier.toml")


def test_the_bring_up_checks_pass(hpn_fabric_module):
    results = bringup.run_all(hpn_fabric_module)
    assert all(c.passed for c in results), [(c.name, c.detail) for c in results]


def test_every_host_is_in_the_fabric(hpn_fabric_module):
    assert set(hpn_fabric_module.fabric.hosts) == {"a0", "a1", "a2", "b0", "b1"}
