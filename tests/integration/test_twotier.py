"""A family loaded from a file (tests/families/twotier.py, not built in) comes up on real OVS with
the real controller and passes the bring-up checks of `up --check`, routed like any family."""
from pathlib import Path

import pytest

from testbed.emulation.build import Options
from testbed.emulation.factory import make_emulation, on_servers
from testbed.measure import bringup
from testbed.model import families

from .conftest import leftovers

TWOTIER_FILE = Path(__file__).resolve().parents[1] / "families" / "twotier.py"

pytestmark = pytest.mark.integration


@pytest.fixture
def twotier():
    [family] = families.load(TWOTIER_FILE)
    yield family
    families.FAMILIES.pop(family.name)


def test_a_family_from_a_file_passes_the_bring_up_checks(twotier):
    fab = families.make_fabric("twotier", {})
    with on_servers(()), make_emulation(fab, Options()) as emu:     # what `up --check` does
        results = bringup.run_all(emu)
        emu.check_whole()
    assert [c.name for c in results] == ["wiring", "reachability", "top-tier TCP"]
    assert all(c.passed for c in results), [(c.name, c.detail) for c in results]
    assert not leftovers(emu), f"left behind: {leftovers(emu)}"
