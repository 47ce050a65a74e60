"""Routing policies: the `routing` options of a run, checked and defaulted."""
import pytest

from testbed.core.errors import ParamError
from testbed.model import make_fabric
from testbed.model import policies as P
from testbed.model.families import get


def test_normalize_defaults_and_errors():
    hpn, clos = make_fabric("hpn"), make_fabric("clos3")
    r = P.normalize(hpn, {})
    assert (r.policy.name, r.core, r.ecmp, r.options) == ("ecmp", "per-port", "seeded", {})
    assert P.normalize(clos, {}).core == "ecmp"
    assert P.normalize(hpn, {"policy": "static", "matrix": [["p0s0h0", "p1s0h1-n1"]]}).options["matrix"] \
        == [["10.0.0.1", "10.1.1.2"]]
    assert P.normalize(hpn, {"policy": "adaptive"}).options == \
        {"interval": 0.5, "hot": 0.8, "elephant": 0.1, "hold": 2.0}
    for bad in ({"policy": "spray"}, {"core": "x"}, {"ecmp": "y"}, {"nosuch": 1},
                {"matrix": [["p0s0h0", "p1s0h0"]]},                    # matrix without static
                {"hot": 0.5},                                          # adaptive's, not ecmp's
                {"policy": "static", "matrix": [["p0s0h0", "nope"]]},
                {"policy": "static", "matrix": [["p0s0h0"]]},
                {"policy": "adaptive", "interval": 0}, {"policy": "adaptive", "hot": "warm"}):
        with pytest.raises(ParamError):
            P.normalize(hpn, bad)


@pytest.mark.parametrize("family, settings", [("mpft", {}), ("mrft", {}), ("hpn", {"pods": 1})])
@pytest.mark.parametrize("core", ["per-port", "ecmp"])
def test_core_is_refused_without_a_core_tier(family, settings, core):
    fab = make_fabric(family, settings)
    with pytest.raises(ParamError, match=f"routing core='{core}': this {family} fabric has no core tier"):
        P.normalize(fab, {"core": core})
    assert P.normalize(fab, {}).core == get(family).default_core   # the default still applies


@pytest.mark.parametrize("family", ["hpn", "clos3"])
@pytest.mark.parametrize("core", ["per-port", "ecmp"])
def test_core_applies_where_there_is_a_core_tier(family, core):
    assert P.normalize(make_fabric(family), {"core": core}).core == core


def test_number_options_must_be_finite():
    hpn = make_fabric("hpn")
    for key in ("interval", "hot", "elephant", "hold"):
        for bad in ("nan", float("inf"), -1, None, "x"):
            with pytest.raises(ParamError, match=f"routing {key}="):
                P.normalize(hpn, {"policy": "adaptive", key: bad})


def test_an_option_of_another_policy_names_the_policy():
    hpn = make_fabric("hpn")
    with pytest.raises(ParamError, match="routing matrix: only applies to policy=static"):
        P.normalize(hpn, {"matrix": [["p0s0h0", "p1s0h0"]]})
    with pytest.raises(ParamError, match="routing hold: only applies to policy=adaptive"):
        P.normalize(hpn, {"policy": "static", "hold": 1})
