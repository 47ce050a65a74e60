"""A family loaded from a file (tests/families/twotier.py, not built in) comes up on real OVS with
the real controller and passes the bring-up checks of `up --check`, routed like any family."""
import pytest

from testbed.measure import bringup

pytestmark = [pytest.mark.integration,       # the plugin's marker and fixture, as a user's test
              pytest.mark.hpn_fabric("twotier", custom="../families/twotier.py")]


def test_a_family_from_a_file_passes_the_bring_up_checks(hpn_fabric):
    results = bringup.run_all(hpn_fabric)          # what `up --check` does
    hpn_fabric.check_whole()
    assert [c.name for c in results] == ["wiring", "reachability", "top-tier TCP"]
    assert all(c.passed for c in results), [(c.name, c.detail) for c in results]
