"""A family loaded from a file (tests/families/twotier.py, not built in) comes up on real OVS with
the real controller and passes the bring-up checks of `up --check`, routed like any family. The
file only defines its Family (families.load registers it), so the test brings it up with the
plugin's hpn_up fixture, as a user's test would."""
from pathlib import Path

import pytest

from testbed.measure import bringup
from testbed.model import families

TWOTIER_FILE = Path(__file__).resolve().parents[1] / "families" / "twotier.py"

pytestmark = pytest.mark.integration


def test_a_family_from_a_file_passes_the_bring_up_checks(hpn_up):
    families.load(TWOTIER_FILE)
    emu = hpn_up("twotier")                  # torn down and checked for leftovers after the test
    results = bringup.run_all(emu)           # what `up --check` does
    emu.check_whole()
    assert [c.name for c in results] == ["wiring", "reachability", "top-tier TCP"]
    assert all(c.passed for c in results), [(c.name, c.detail) for c in results]
