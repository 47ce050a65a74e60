"""The family registry: every registered family answers every question the testbed asks of one,
a throwaway family (tests/families/twotier.py) joins with one call and is taken everywhere, and a
malformed one is refused with one line."""
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.cli import main
from testbed.core.errors import ParamError
from testbed.model import budget, families
from testbed.model.draw import draw
from testbed.model.fabric import TIERS, Fabric
from testbed.model.families import FAMILIES, HPN, register
from testbed.model.placement import TOP, place, unit_of
from testbed.model.policies import CORE_MODES, normalize

TWOTIER_FILE = Path(__file__).resolve().parents[1] / "families" / "twotier.py"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def twotier():
    """The throwaway family, registered for one test (families.load: one call)."""
    [family] = families.load(TWOTIER_FILE)
    yield family
    FAMILIES.pop(family.name)


@pytest.fixture(params=[*FAMILIES, "twotier"])
def family(request):
    if request.param != "twotier":
        yield FAMILIES[request.param]
        return
    yield request.getfixturevalue("twotier")


def test_parameters_and_build(family):
    family.params().check()                      # the defaults validate
    fab = family.make()                          # limits by arithmetic, built, Fabric.validate
    assert isinstance(fab, Fabric) and fab.family == family.name
    assert fab.params.size().links == len(fab.links)
    assert {s.role for s in fab.switches.values()} <= set(TIERS)
    assert fab.routed_pairs(), "some NIC pair is routed"


def test_presets_resolve_and_build(family):
    for name in family.presets:
        fab = family.make(family.preset(name))
        assert fab.summary()["family"] == family.name
    with pytest.raises(ParamError, match=f"no preset 'nosuch' for {family.name}"):
        family.preset("nosuch")


def test_budget_counts_every_claim_of_every_budget_preset(family):
    if family.budget is None:
        assert family.name not in families.budgeted()
        return
    for preset in family.budget.presets:
        result = budget.budget(family.name, preset)
        assert set(result) == {"meta", *family.budget.claims}
        assert all("match" in e for claim in family.budget.claims for e in result[claim].values())


def test_placement_units_keep_host_links_whole(family):
    fab = family.make()
    units = {unit_of(fab, n) for n in [*fab.switches, *fab.hosts]} - {TOP}
    assert all(unit_of(fab, h) != TOP for h in fab.hosts), "every host is in a unit"
    for count in (1, len(units)):
        placed = place(fab, count)
        assert all(placed.server_of(l.a) == placed.server_of(l.b) for l in fab.host_links())


def test_drawing_and_routing_answers(family, tmp_path):
    fab = family.make()
    for s in fab.switches.values():
        key = family.group(fab, s)
        assert key is None or (isinstance(key[0], int) and isinstance(key[1], str))
    assert isinstance(family.title(fab.params), dict) and isinstance(family.shared, str)
    assert draw(fab, tmp_path / "f.png").read_bytes().startswith(PNG_MAGIC)
    assert family.default_core in CORE_MODES
    assert normalize(fab, {}).core == family.default_core


def test_the_throwaway_family_is_taken_by_topo(twotier, tmp_path, capsys):
    png = tmp_path / "t.png"
    assert main(["topo", "show", "twotier", "--preset", "wide", "--servers", "2",
                 "--png", str(png), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["result"]
    assert shown["hosts"] == 6 and shown["placement"]["host_links_cut"] == 0
    assert png.read_bytes().startswith(PNG_MAGIC)
    assert main(["topo", "budget", "twotier", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["result"]["T1"]["hosts"]["match"] is True


def test_another_process_gets_the_family_from_the_spec(twotier, tmp_path):
    """What the controller does with a run's spec.json: load the family's file, build the fabric."""
    spec = families.spec_of(twotier.make({"leaves": 4}))
    assert spec["family_file"] == str(TWOTIER_FILE)
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    code = ("import json, sys; from testbed.model import families; "
            "print(len(families.from_spec(json.load(open(sys.argv[1]))).switches))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "spec.json")], check=True,
                         capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2]).stdout
    assert out.strip() == "5"


def test_loading_a_file_twice_registers_nothing_new(twotier):
    assert families.load(TWOTIER_FILE) == [twotier]


def unregistered_twotier():
    """The throwaway family's object, read from its file without registering it."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("twotier_unregistered", TWOTIER_FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module.TWOTIER


@pytest.mark.parametrize("change, message", [
    ({"name": "Two Tier"}, "register: family name 'Two Tier' must be a lower-case identifier"),
    ({"name": "other"}, "register other: its params class says family 'twotier'"),
    ({"params": dict}, "register twotier: params must be a Params subclass"),
    ({"build": None}, "register twotier: no answer for build"),
    ({"unit": None, "group": 3}, "register twotier: no answer for unit, group"),
    ({"budget": "B1"}, "register twotier: no answer for budget"),
    ({"presets": {"x": {"nosuch": 1}}}, "register twotier: preset 'x' sets unknown parameter 'nosuch'"),
])
def test_a_malformed_family_is_refused_with_one_line(change, message):
    with pytest.raises(ParamError, match=f"^{message}$") as refused:
        register(dataclasses.replace(unregistered_twotier(), **change))
    assert "\n" not in str(refused.value)
    assert set(FAMILIES) == {f.name for f in families.BUILT_IN}


def test_a_name_clash_and_a_non_family_are_refused():
    with pytest.raises(ParamError, match="^register: a family named 'hpn' is already registered$"):
        register(dataclasses.replace(HPN))
    with pytest.raises(ParamError, match="^register: expected a Family, got dict$"):
        register({"name": "x"})


def test_a_file_with_no_family_is_refused(tmp_path):
    empty = tmp_path / "empty.py"
    empty.write_text("X = 1\n")
    with pytest.raises(ParamError, match="defines no Family"):
        families.load(empty)
    broken = tmp_path / "broken.py"
    broken.write_text("def (:\n")
    with pytest.raises(ParamError, match="broken.py"):
        families.load(broken)
