"""Scenarios and routing policies from a user's file (`--custom FILE.py`): the examples register,
`list` and `run --help` show them, the scenario's judge is pure, and a malformed scenario is one
line naming the file and the problem, exit status 2, before anything is built."""
import json
from pathlib import Path

import pytest

import scenarios
from testbed.cli import main
from testbed.core import plugins
from testbed.model import make_fabric, policies
from testbed.scenario.base import INVALID, NOT_REPRODUCED, REPRODUCED

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "examples" / "custom_scenario.py"
POLICY = ROOT / "examples" / "custom_policy.py"


@pytest.fixture
def restored(registries_restored):
    """(tests/unit/conftest.py)"""


def test_list_shows_the_example_scenario_after_ours(restored, capsys):
    assert main(["list", "--custom", str(SCENARIO), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["result"]
    assert listed[-1] == {"name": "ecmp-spread", "claim": "U1", "title": scenarios.get("ecmp-spread").title,
                          "tour": False}
    assert [s["name"] for s in listed[:-1]] == list(scenarios.built_in())


def test_run_help_lists_its_knobs_and_a_bad_knob_is_one_line(restored, capsys):
    assert main(["run", "ecmp-spread", "--help", "--custom", str(SCENARIO)]) == 0
    assert "min_share" in capsys.readouterr().out
    assert main(["run", "ecmp-spread", "--custom", str(SCENARIO), "--set", "connections=1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "hpn-testbed: ecmp-spread: connections=1: must be between 2 and 64 (TCP connections " \
                  "of the one client)"


def test_the_example_judge_is_pure(restored):
    plugins.load(SCENARIO)
    s = scenarios.get("ecmp-spread")
    even = {"uplink_bytes": {"pl0l0-eth2": 500, "pl0l0-eth3": 500}, "setup": {"knobs": {"min_share": 0.1}}}
    lopsided = {"uplink_bytes": {"pl0l0-eth2": 990, "pl0l0-eth3": 10}, "setup": {}}
    assert s.judge(even).verdict == REPRODUCED and s.judge(even).derived == {"least_share": 0.5}
    assert s.judge(lopsided).verdict == NOT_REPRODUCED
    assert s.judge({"uplink_bytes": {"a": 0, "b": 0}}).verdict == INVALID
    assert s.configure({}, quick=True).knobs.connections == 8


def test_the_example_policy_routes_one_port_per_destination(restored):
    plugins.load(POLICY)
    fab = make_fabric("clos3")
    routing = policies.normalize(fab, {"policy": "first-port"})
    routes = policies.all_routes(fab)
    out = routing.routes(fab, routes, [])
    assert [r.ports for r in out] == [(min(r.ports),) for r in routes]
    assert policies.source("first-port") == str(POLICY), "the controller loads this file"
    skipped = policies.normalize(fab, {"policy": "first-port", "skip": 1})
    assert any(r.ports != o.ports for r, o in zip(skipped.routes(fab, routes, []), out))


def test_a_file_with_a_family_and_its_policy_runs_once_for_both(restored, tmp_path):
    """The controller loads a run's family file, then its policy file: one file, one run."""
    both = tmp_path / "both.py"
    both.write_text(f"exec(open({str(ROOT / 'examples' / 'custom_family.py')!r}).read())\n"
                    f"exec(open({str(POLICY)!r}).read())\n")
    from testbed.model import families
    assert [f.name for f in families.load(both)] == ["dualroot"]
    assert policies.load_file(both) == ["first-port"]        # not run again: no "name taken"


GOOD = '''
from dataclasses import dataclass
from typing import ClassVar
from scenarios import register
from testbed.scenario.base import Judgement, Scenario
from testbed.scenario.knobs import Knobs

@dataclass(frozen=True)
class K(Knobs):
    seconds: float = 2.0
    BOUNDS: ClassVar[dict] = {"seconds": (1.0, 9.0, "seconds")}
    HELP: ClassVar[dict] = {"seconds": "how long"}

class Mine(Scenario, name=NAME, claim="U9"):
    title = "a title"
    paper = "a figure"
    families = ("hpn",)
    Knobs = K
    def run(self, quick):
        return {}
    def judge(self, figures):
        return Judgement("reproduced", "e", "m")
'''


@pytest.mark.parametrize("change,problem", [
    ({"NAME": "'dual-tor-link-failure'"}, "the name is taken"),
    ({"NAME": "'Bad_Name'"}, "name: lower-case words joined by '-'"),
    ({'claim="U9"': 'claim=""'}, "no claim (one line of text)"),
    ({'claim="U9"': 'claim="U9", tour=True'}, "tour=True: the tour (`run` with no name) is the built-in"),
    ({"    def judge(self, figures):\n        return Judgement(\"reproduced\", \"e\", \"m\")\n": ""},
     "no judge() of its own"),
    ({'families = ("hpn",)': 'families = ("nosuch",)'}, "family 'nosuch' is not registered"),
    ({"    Knobs = K\n": "    Knobs = K\n    base = {'nosuch': 1}\n"}, "base sets 'nosuch'"),
    ({"seconds: float = 2.0": "seconds: list = 2.0"}, "knob seconds: type must be int, float"),
    ({'BOUNDS: ClassVar[dict] = {"seconds": (1.0, 9.0, "seconds")}': ""},
     "a number needs BOUNDS['seconds']"),
    ({'HELP: ClassVar[dict] = {"seconds": "how long"}': ""}, "knob seconds: no HELP"),
    ({"seconds: float = 2.0": "seconds: float = 20.0"},
     "its defaults are refused: mine: seconds=20.0: must be between 1.0 and 9.0"),
    ({"    Knobs = K\n": "    Knobs = K\n    base = {'hosts': 0}\n"},
     "its defaults are refused: mine: hosts=0"),
    ({"seconds: float = 2.0": "hosts: int = 2"}, "knob 'hosts' has the name of a fabric parameter"),
    ({"register(Mine)": "register(K)"}, "not a Scenario subclass"),
])
def test_a_malformed_scenario_is_one_line_naming_the_file(restored, tmp_path, capsys, change, problem):
    text = GOOD.replace("NAME", "'mine'") + "register(Mine)\n"
    for old, new in change.items():
        if old == "NAME":
            text = GOOD.replace("NAME", new) + "register(Mine)\n"
        else:
            assert old in text, old
            text = text.replace(old, new)
    mine = tmp_path / "mine.py"
    mine.write_text(text)
    assert main(["list", "--custom", str(mine)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"hpn-testbed: --custom {mine}:"), err
    assert problem in err, err


def test_the_good_one_registers(restored, tmp_path):
    (tmp_path / "mine.py").write_text(GOOD.replace("NAME", "'mine'") + "register(Mine)\n")
    plugins.load(tmp_path / "mine.py")
    assert "mine" in scenarios.all_scenarios() and scenarios.get("mine").claim == "U9"


def test_an_experiment_file_names_a_plugin_policy_and_fault_kind(restored, tmp_path, capsys):
    """What `custom = [...]` loads is among an experiment file's choices: its [routing] policy and
    its [[fault]] kinds, checked as ours (`run FILE --check`, nothing built)."""
    import shutil
    shutil.copy(POLICY, tmp_path / "custom_policy.py")
    (tmp_path / "blink.py").write_text(
        "from testbed import FaultArg, FaultKind, register_fault_kind\n"
        "from testbed.emulation.faults.kinds import PORT\n\n"
        "class Blink(FaultKind):\n    name, help = 'blink', 'a link down'\n"
        "    args = (FaultArg('port', PORT, 'either end', positional=True),)\n\n"
        "    def inject(self, faults, port):\n        return faults.link_down(faults.link(port))\n\n"
        "register_fault_kind(Blink())\n")
    body = ('name = "mine"\ncustom = ["custom_policy.py", "blink.py"]\n[fabric]\nfamily = "clos3"\n'
            '[routing]\npolicy = "first-port"\n[[traffic]]\nkind = "iperf3"\nfrom = "p0e0h0"\n'
            'to = "p1e0h0"\nseconds = 4\n[[fault]]\nkind = "blink"\nport = PORT\nat = 2\nfor = 1\n')
    from testbed.model import make_fabric
    fab = make_fabric("clos3")
    hosts = list(fab.hosts)
    port = fab.host_links()[0].a_intf
    (tmp_path / "mine.toml").write_text(body.replace("p0e0h0", hosts[0]).replace("p1e0h0", hosts[-1])
                                        .replace("PORT", f'"{port}"'))
    assert main(["run", str(tmp_path / "mine.toml"), "--check"]) == 0, capsys.readouterr().err
    assert "valid (clos3, 1 traffic, 0 job, 1 fault, 0 expect)" in capsys.readouterr().out


def test_a_plugin_that_first_imports_the_registries_leaves_ours_without_origin():
    """A fresh process whose first import of the registries is a plug-in's (the CLI loads plug-ins
    before its parser): ours must not be taken for the plug-in's, or the controller would load
    the plug-in to rebuild `mpft` (and find no family in it)."""
    import subprocess
    import sys
    code = (f"from testbed.core import plugins; plugins.load({str(SCENARIO)!r}); "
            f"plugins.load({str(POLICY)!r})\n"
            "from testbed.model import families, policies\n"
            "assert all(f.origin is None for f in families.registered().values()), "
            "[(n, f.origin) for n, f in families.registered().items()]\n"
            f"assert [policies.source(n) for n in policies.names()] == [None, None, None, {str(POLICY)!r}]\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          check=False)
    assert done.returncode == 0, done.stderr
