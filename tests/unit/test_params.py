"""Parameters: every number finite and in range, ints ints; sizes and ports by arithmetic agree
with what build() makes; too-large fabrics are refused before any model object exists."""
import dataclasses
import itertools
import random
import typing
from collections import defaultdict

import pytest

from testbed.core.errors import ParamError
from testbed.model import FAMILIES, limits, make_fabric
from testbed.model import fabric as fabric_module
from testbed.model.families import budgeted
from testbed.model.params import _target

PAPER = {name: f.budget.presets["paper"] for name, f in budgeted().items()}


def number_fields(cls):
    hints = typing.get_type_hints(cls)
    return [(f.name, _target(hints[f.name])[0]) for f in dataclasses.fields(cls)
            if _target(hints[f.name])[0] in (int, float)]


@pytest.fixture
def nothing_built(monkeypatch):
    """Building a fabric fails the test: a refusal must come from the arithmetic alone."""
    def forbidden(*args, **kwargs):
        raise AssertionError("a model object was built")
    monkeypatch.setattr(fabric_module.Fabric, "__init__", forbidden)
    for name, family in FAMILIES.items():
        monkeypatch.setitem(FAMILIES, name, dataclasses.replace(family, build=forbidden))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_number_parameter_has_bounds(family):
    cls = FAMILIES[family].params
    for name, _ in number_fields(cls):
        lo, hi, why = cls.BOUNDS[name]
        default = getattr(cls, name)
        assert (default is None or lo <= default <= hi) and why, name


def bad_values(cls, name, kind):
    lo, hi, _ = cls.BOUNDS[name]
    values = [float("nan"), float("inf"), float("-inf"), hi * 2 + 1, lo - 1, "nan", "inf", "-1e400",
              "1e400", "abc", str(hi + 1)]
    if kind is int:
        values += [1.5, 2.0, True, "1.5", "1e3", "99999999999999999999999"]
    else:
        values += [lo / 2 if lo > 0 else -0.5, str(lo / 2 if lo > 0 else -0.5)]
    return values


@pytest.mark.parametrize("family", list(FAMILIES))
def test_bad_numbers_are_refused_by_name(family, nothing_built):
    cls = FAMILIES[family].params
    for name, kind in number_fields(cls):
        for value in bad_values(cls, name, kind):
            with pytest.raises(ParamError, match=f"^{name}="):
                make_fabric(family, {name: value})


@pytest.mark.parametrize("settings, words", [
    ({"scale": float("nan")}, "scale=nan: must be a finite number"),
    ({"scale": 1e-9}, "scale=1e-09: must be between 5e-05 and 10.0"),
    ({"host_gbps": "nan"}, "host_gbps=nan: must be a finite number"),
    ({"backup_hosts": -1}, "backup_hosts=-1: must be between 0 and"),
    ({"pods": 2.0}, "pods=2.0: expected int"),
    ({"pods": True}, "pods=True: expected int"),
    ({"single_tor": 1}, "single_tor=1: expected bool"),
    ({"single_tor": "maybe"}, "single_tor='maybe': expected bool"),
    ({"pods": 100_000}, "pods=100000: must be between 1 and 256"),
    ({"aggs_per_plane": 1_000_000}, "aggs_per_plane=1000000: must be between 1 and 65280"),
    ({"pods": 16, "segments": 17}, "at most 256 segments"),
])
def test_hpn_refusals_name_the_rule(settings, words, nothing_built):
    with pytest.raises(ParamError, match=words.replace("(", r"\(").replace(".", r"\.")):
        make_fabric("hpn", settings)


def test_ints_may_be_given_for_floats_and_none_for_optional():
    fab = make_fabric("hpn", {"host_gbps": 100, "tors": None, "dual_plane": None})
    assert fab.params.host_gbps == 100
    assert make_fabric("hpn", ["tors=none"]).params.tors is None


def random_settings(family, rng):
    """Small valid-looking settings: not all valid (that is for the family's rules to say)."""
    ranges = {
        "hpn": dict(pods=(1, 3), segments=(1, 2), hosts=(1, 4), nics=(1, 4), rails=(1, 4),
                    aggs_per_plane=(1, 3), cores=(1, 3)),
        "clos3": dict(pods=(1, 3), edges=(1, 3), aggs=(1, 3), cores=(1, 3), hosts_per_edge=(1, 3)),
        "mpft": dict(planes=(1, 3), leaves=(1, 3), spines=(1, 3), hosts_per_leaf=(1, 3)),
        "mrft": dict(rails=(1, 3), leaves=(1, 3), spines=(1, 3), hosts_per_leaf=(1, 3)),
        "file": {},     # its default topology file (testbed/model/families/default.toml)
    }[family if family != "railonly" else "hpn"]     # railonly takes HPN's parameters
    settings = {k: rng.randint(lo, hi) for k, (lo, hi) in ranges.items()}
    if family in ("hpn", "railonly"):
        settings["single_tor"] = rng.random() < 0.3
        settings["dual_plane"] = rng.choice([None, False] if settings["single_tor"] else [None, True, False])
    return settings


def built_ports(fab):
    """role -> (down, up) of the switch of that role with the most ports, as built."""
    down, up = defaultdict(int), defaultdict(int)
    for link in fab.links:
        down[link.b] += 1
        if link.a in fab.switches:
            up[link.a] += 1
    ports = {}
    for name, sw in fab.switches.items():
        ports[sw.role] = max(ports.get(sw.role, (0, 0)), (down[name], up[name]), key=sum)
    return ports


@pytest.mark.parametrize("family", list(FAMILIES))
def test_arithmetic_counts_what_build_makes(family):
    rng = random.Random(family)
    checked = 0
    for _ in range(60):
        settings = dict(random_settings(family, rng), radix=1000)
        try:
            fab = make_fabric(family, settings)
        except ParamError:
            continue      # e.g. rails > nics
        size = fab.params.size()
        assert size == limits.Size(len(fab.switches), len(fab.hosts), len(fab.nics()),
                                   len(fab.links)), settings
        assert fab.params.ports() == built_ports(fab), settings
        assert sorted(set(fab.params.link_gbps())) == sorted({l.gbps for l in fab.links}), settings
        checked += 1
    assert checked >= 20


def test_radix_is_checked_before_building(nothing_built):
    with pytest.raises(ParamError, match=r"radix=3: a tor switch needs 4 ports \(2 down, 2 up\)"):
        make_fabric("hpn", {"radix": 3})
    with pytest.raises(ParamError, match="radix=64: a spine switch needs 100 ports"):
        make_fabric("mrft", {"rails": 2, "leaves": 50, "spines": 1})


def test_emulator_size_limit_before_building(nothing_built):
    with pytest.raises(ParamError, match=r"^pods=200: 1,602 switches; the emulator's limit is 512$"):
        make_fabric("hpn", {"pods": 200})
    with pytest.raises(ParamError, match="aggs_per_plane=60000: 240,010 switches; the emulator's"):
        make_fabric("hpn", {"aggs_per_plane": 60000})
    with pytest.raises(ParamError, match="728 switches; the emulator.s limit is 512"):
        make_fabric("hpn", PAPER["hpn"])


def test_model_limit_is_larger_but_refuses_absurd_sizes(nothing_built):
    huge = dict(radix=65280, pods=1, segments=256, hosts=250, nics=256, rails=256)
    with pytest.raises(ParamError, match=r"131,076 switches; the model's limit is 100,000"):
        make_fabric("hpn", huge, emulated=False)
    with pytest.raises(ParamError, match="links; the model's limit is 1,000,000"):
        make_fabric("mpft", dict(planes=256, leaves=256, spines=1, hosts_per_leaf=250,
                                 radix=65280), emulated=False)


@pytest.mark.parametrize("family", list(PAPER))
def test_paper_presets_fit_the_model(family):
    fab = make_fabric(family, PAPER[family], emulated=False)
    assert fab.params.size().links == len(fab.links)


def test_memory_estimate_against_this_machine(monkeypatch, nothing_built):
    monkeypatch.setattr(limits, "ram_bytes", lambda: 64 * 2**20)     # a 64 MiB machine
    with pytest.raises(ParamError, match=r"the defaults: .* GiB for the emulator; this machine has 0\.1 GiB"):
        make_fabric("hpn")


def test_ram_is_read_from_meminfo():
    assert limits.ram_bytes() > 2**28


def test_emulated_rates_have_a_floor(nothing_built):
    with pytest.raises(ParamError, match="host_gbps=1: the slowest link .* 0.005 Mbit/s"):
        make_fabric("hpn", {"host_gbps": 1, "scale": 0.005})
    with pytest.raises(ParamError, match="scale=0.0001, host_gbps=50: the slowest link"):
        make_fabric("mpft", {"scale": 0.0001, "host_gbps": 50})


def test_rate_floor_is_the_emulators_only():
    fab = make_fabric("hpn", {"host_gbps": 1}, emulated=False)
    assert min(l.gbps for l in fab.links) == 1


@pytest.mark.parametrize("family,bad", list(itertools.product(
    ["hpn", "clos3", "mpft", "mrft"], ["nosuch=1", "pods", "=3", " = "])))
def test_malformed_settings(family, bad):
    with pytest.raises(ParamError):
        make_fabric(family, [bad])
