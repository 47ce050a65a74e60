"""--custom FILE.py and `custom = "file.py"`: a plug-in's families are taken by topo, up, run and
experiment files; a plug-in that is missing, raises, or registers something malformed gets one
line naming the file, exit status 2, and nothing is created (it fails before the parser)."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.cli import main
from testbed.core import plugins
from testbed.model import families

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "custom_family.py"


@pytest.fixture
def registry():
    """Whatever a test's plug-ins register is gone after it."""
    before = dict(families.FAMILIES)
    yield
    families.FAMILIES.clear()
    families.FAMILIES.update(before)
    plugins._loaded.clear()


def test_topo_show_takes_a_plugin_family(registry, capsys):
    assert main(["topo", "show", "dualroot", "--custom", str(EXAMPLE), "--preset", "wide",
                 "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["result"]
    assert shown["family"] == "dualroot" and shown["hosts"] == 6
    assert shown["equal_cost_paths"]["paths"] == 2
    assert families.get("dualroot").origin == str(EXAMPLE), "the controller can load it again"


def test_an_experiment_file_loads_its_plugin_relative_to_itself(registry, tmp_path, capsys):
    shutil.copy(EXAMPLE, tmp_path / "mine.py")
    (tmp_path / "exp.toml").write_text(
        'custom = "mine.py"\n[fabric]\nfamily = "dualroot"\nleaves = 2\n'
        '[[traffic]]\nkind = "iperf3"\nfrom = "l0h0"\nto = "l1h1"\nseconds = 2\n')
    assert main(["run", str(tmp_path / "exp.toml"), "--check"]) == 0
    assert "exp" in capsys.readouterr().out


def test_a_bad_plugin_in_an_experiment_file_is_one_line(registry, tmp_path, capsys):
    (tmp_path / "bad.py").write_text("raise RuntimeError('no')\n")
    (tmp_path / "exp.toml").write_text('custom = "bad.py"\n[fabric]\nfamily = "hpn"\n'
                                       '[[traffic]]\nkind = "iperf3"\nfrom = "a"\nto = "b"\n')
    assert main(["run", str(tmp_path / "exp.toml"), "--check"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"hpn-testbed: {tmp_path / 'exp.toml'}: top level: custom: bad.py:1: RuntimeError: no"


BAD = {   # file text -> what its one line says after "hpn-testbed: --custom FILE"
    "raise ValueError('broken on purpose')\n": ":1: ValueError: broken on purpose",
    "def (:\n": ":1: invalid syntax",
    "import no_such_module_here\n": ":1: ModuleNotFoundError: No module named 'no_such_module_here'",
    "from testbed.model.families import HPN, register\nregister(HPN)\n":
        ": register: a family named 'hpn' is already registered",
    ("import dataclasses\nfrom testbed.model.families import HPN, register\n"
     "register(dataclasses.replace(HPN, name='Bad Name'))\n"):
        ": register: family name 'Bad Name' must be a lower-case identifier",
    "from testbed.model.families import register\nregister({'name': 'x'})\n":
        ": register: expected a Family, got dict",
}


@pytest.mark.parametrize("text, problem", BAD.items(), ids=range(len(BAD)))
def test_a_bad_plugin_is_one_line_exit_2_nothing_created(tmp_path, text, problem):
    plugin = tmp_path / "plugin.py"
    plugin.write_text(text)
    done = subprocess.run([sys.executable, "-m", "testbed", "up", "hpn", "--check", "--custom",
                           str(plugin)], check=False, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [f"hpn-testbed: --custom {plugin}{problem}"]


@pytest.mark.parametrize("path, problem", [("nosuch.py", "no such plug-in file"),
                                           ("README.md", "a plug-in is a Python file (.py)")])
def test_a_missing_or_non_python_plugin_is_one_line(path, problem, capsys):
    assert main(["topo", "show", "hpn", f"--custom={path}"]) == 2
    assert capsys.readouterr().err.splitlines() == [f"hpn-testbed: --custom {path}: {problem}"]
