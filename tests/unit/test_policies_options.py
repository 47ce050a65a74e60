"""Routing policies: the `routing` options of a run, checked and defaulted."""
import pytest

from testbed.core.errors import ParamError
from testbed.model import make_fabric
from testbed.model import policies as P
from testbed.model.families import get


def test_normalize_defaults_and_errors():
    hpn, clos = make_fabric("hpn"), make_fabric("clos3")
    r = P.normalize(hpn, {})
    assert (r["policy"], r["core"], r["ecmp"], r["matrix"]) == ("ecmp", "per-port", "seeded", [])
    assert P.normalize(clos, {})["core"] == "ecmp"
    assert P.normalize(hpn, {"policy": "static", "matrix": [["p0s0h0", "p1s0h1-n1"]]})["matrix"] \
        == [["10.0.0.1", "10.1.1.2"]]
    for bad in ({"policy": "spray"}, {"core": "x"}, {"ecmp": "y"}, {"nosuch": 1},
                {"matrix": [["p0s0h0", "p1s0h0"]]},                    # matrix without static
                {"policy": "static", "matrix": [["p0s0h0", "nope"]]},
                {"policy": "static", "matrix": [["p0s0h0"]]},
                {"interval": 0}, {"hot": "warm"}):
        with pytest.raises(ParamError):
            P.normalize(hpn, bad)


@pytest.mark.parametrize("family, settings", [("mpft", {}), ("mrft", {}), ("hpn", {"pods": 1})])
@pytest.mark.parametrize("core", ["per-port", "ecmp"])
def test_core_is_refused_without_a_core_tier(family, settings, core):
    fab = make_fabric(family, settings)
    with pytest.raises(ParamError, match=f"routing core='{core}': this {family} fabric has no core tier"):
        P.normalize(fab, {"core": core})
    assert P.normalize(fab, {})["core"] == get(family).default_core   # the default still applies


@pytest.mark.parametrize("family", ["hpn", "clos3"])
@pytest.mark.parametrize("core", ["per-port", "ecmp"])
def test_core_applies_where_there_is_a_core_tier(family, core):
    assert P.normalize(make_fabric(family), {"core": core})["core"] == core


def test_number_options_must_be_finite():
    hpn = make_fabric("hpn")
    for key in ("interval", "hot", "elephant", "hold"):
        for bad in ("nan", float("inf"), -1, None, "x"):
            with pytest.raises(ParamError, match=f"routing {key}="):
                P.normalize(hpn, {key: bad})
