"""Routing policies: the `routing` options of a run, checked and defaulted."""
import pytest

from testbed.core.errors import ParamError
from testbed.model import make_fabric
from testbed.model import policies as P


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
