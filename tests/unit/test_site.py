"""Both sites satisfy the Site interface an Emulation is written against: every member, with the
same parameters, so that the builder, faults, traces and meters never ask a site for more."""
import inspect

import pytest

from testbed.emulation.cluster.site import ClusterSite
from testbed.emulation.site import LocalSite, Site

MEMBERS = [name for name in dir(Site) if not name.startswith("_")] + list(Site.__annotations__)


def parameters(function) -> list[tuple[str, object]]:
    return [(p.name, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize("site", [LocalSite, ClusterSite], ids=lambda c: c.__name__)
def test_every_site_gives_every_member_of_the_interface(site):
    missing = [m for m in MEMBERS if not hasattr(site, m)]
    assert not missing, f"{site.__name__} lacks {missing}"


@pytest.mark.parametrize("site", [LocalSite, ClusterSite], ids=lambda c: c.__name__)
def test_every_method_takes_the_interface_parameters(site):
    for name in MEMBERS:
        wanted = getattr(Site, name, None)
        if callable(wanted) and not isinstance(wanted, type):
            assert parameters(getattr(site, name)) == parameters(wanted), f"{site.__name__}.{name}"


def test_the_interface_is_what_the_builder_reads():
    """Every `self.site.X` / `emu.site.X` the emulation reads is a member of Site."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / "testbed"
    used = {m for path in root.rglob("*.py")
            for m in re.findall(r"\b(?:self|emu|emulation)\.site\.([a-z_]+)", path.read_text())}
    assert used and used <= set(MEMBERS), sorted(used - set(MEMBERS))
