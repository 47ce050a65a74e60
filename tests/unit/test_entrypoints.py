"""Installed packages' plug-ins: one entry-point group per kind (hpn_testbed.families, .policies,
.fault_kinds, .scenarios), loaded where each registry is first read; a broken entry point is one
line naming the distribution and the problem, exit status 2. The distribution here is fake: a
directory on sys.path holding a module and its .dist-info, as pip would install it."""
import importlib
import sys
from pathlib import Path

import pytest

import scenarios
from testbed.cli import main
from testbed.core import entrypoints
from testbed.emulation.faults import registry as fault_registry
from testbed.model import families, policies

ROOT = Path(__file__).resolve().parents[2]
MODULE = '''
from testbed.emulation.faults.kinds import FaultKind
from testbed.model.policies import RoutingPolicy

class Noop(FaultKind):
    name, help = "noop", "a fault that does nothing"
    def inject(self, faults):
        return None

class Same(RoutingPolicy):
    name, summary = "same", "ECMP under another name"

NOOP, SAME = Noop(), Same()
'''


def install(where: Path, entry_points: str, extra: str = "", dist: str = "fakepkg") -> None:
    """A distribution `dist` in `where` (on sys.path): module fake_hpn_plugin and its entry points."""
    (where / "fake_hpn_plugin.py").write_text(MODULE + extra)
    info = where / f"{dist}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)


@pytest.fixture
def site(tmp_path, monkeypatch, registries_restored):
    monkeypatch.syspath_prepend(str(tmp_path))
    entrypoints.forget()
    yield tmp_path
    for module in ("fake_hpn_plugin", "custom_family", "custom_scenario"):
        sys.modules.pop(module, None)
    importlib.invalidate_caches()


def test_each_group_registers_at_its_registrys_first_read(site):
    (site / "custom_family.py").write_text((ROOT / "examples" / "custom_family.py").read_text())
    (site / "custom_scenario.py").write_text((ROOT / "examples" / "custom_scenario.py").read_text())
    install(site, "[hpn_testbed.fault_kinds]\nnoop = fake_hpn_plugin:NOOP\n"
                  "[hpn_testbed.policies]\nsame = fake_hpn_plugin:SAME\n"
                  "[hpn_testbed.families]\ndualroot = custom_family\n"
                  "[hpn_testbed.scenarios]\necmp-spread = custom_scenario:EcmpSpread\n")
    assert "noop" not in fault_registry.REGISTRY.kinds, "not at import: at the first read"
    assert fault_registry.get("noop").help == "a fault that does nothing"
    assert policies.names()[-1] == "same" and policies.source("same") is None, \
        "the controller loads the entry point itself, not a file"
    assert families.get("dualroot").origin is None
    assert "ecmp-spread" in scenarios.all_scenarios()


def test_an_entry_point_of_another_kind_is_refused_by_that_registry(site, capsys):
    install(site, "[hpn_testbed.families]\nwrong = fake_hpn_plugin:SAME\n")
    assert main(["topo", "show", "hpn"]) == 2
    err = capsys.readouterr().err
    assert err == ("hpn-testbed: fakepkg: entry point wrong = fake_hpn_plugin:SAME "
                   "(hpn_testbed.families): register: expected a Family, got Same\n")


@pytest.mark.parametrize("entry,extra,problem", [
    ("nosuch = no_such_module:X", "", "ModuleNotFoundError: No module named 'no_such_module'"),
    ("bad = fake_hpn_plugin:NOPE", "", "AttributeError"),
    ("boom = fake_hpn_plugin:NOOP", "raise RuntimeError('boom')\n", "RuntimeError: boom"),
    ("taken = fake_hpn_plugin:TAKEN", "class T(Noop):\n    name = 'link-down'\nTAKEN = T()\n",
     "fault kind 'link-down' refused: 'link-down' is taken"),
])
def test_a_broken_entry_point_is_one_line_naming_its_distribution(site, capsys, entry, extra, problem):
    install(site, f"[hpn_testbed.fault_kinds]\n{entry}\n", extra, dist="brokenpkg")
    with pytest.raises(Exception) as e:
        fault_registry.kinds()
    assert str(e.value).startswith(f"brokenpkg: entry point {entry} (hpn_testbed.fault_kinds): ")
    assert problem in str(e.value) and "\n" not in str(e.value)
    assert e.value.exit_status == 2


def test_the_cli_reports_it_before_anything(site, capsys):
    install(site, "[hpn_testbed.policies]\nx = no_such_module:X\n", dist="brokenpkg")
    assert main(["up", "hpn"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hpn-testbed: brokenpkg: entry point x = no_such_module:X") and err.count("\n") == 1


def test_nothing_installed_changes_nothing(site):
    before = list(families.registered())
    entrypoints.forget()
    assert list(families.registered()) == before and entrypoints.found("families") == []
