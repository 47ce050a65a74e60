"""A user outside the project tree (issue 23, "done when"): a temporary directory with a fresh venv
and only `pip install` of the project, and the user's own files there: a family, a routing
policy and a scenario (copies of examples/), and a CI test using only the pytest plugin. Then
`hpn-testbed up FAMILY --custom ... --policy ... --check` passes, `hpn-testbed run SCENARIO
--custom ...` gives a verdict, and the CI test passes in that venv.

The venv is made as the README's install makes ours (`--system-site-packages` from the system
Python, which brings Debian's Mininet). The test has no network, so the project's dependencies
(os-ken, rich, pytest, ...) come from our own venv's site-packages, named by a `.pth` line (a
plain path: its editable-install hook is not run, so `testbed` is the copy pip installed there);
pip builds the project from a copy of its sources (setup.py, pyproject.toml, the packages), so
nothing is written into the tree.
"""
from __future__ import annotations

import json
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PACKAGES = ("testbed", "controller", "scenarios")

pytestmark = pytest.mark.integration

USER_TEST = '''
"""The user's CI test: the plugin's fixture only (no conftest, nothing of hpn-testbed's tests)."""
import pytest

from testbed import run_checks

pytestmark = pytest.mark.hpn_fabric("dualroot", custom=["my_family.py", "my_policy.py"],
                                    routing={"policy": "first-port"}, leaves=2)


def test_my_fabric_passes_the_checks(hpn_fabric):
    import testbed
    assert testbed.__file__.startswith(VENV), testbed.__file__
    assert hpn_fabric.status().policy["policy"] == "first-port"
    results = run_checks(hpn_fabric)
    assert results and all(c.passed for c in results), [(c.name, c.detail) for c in results]
'''


def fresh_venv(where: Path) -> Path:
    """A venv at `where`/venv with the project pip-installed (not editable) from a copy of its
    sources; its python."""
    src = where / "src"
    src.mkdir()
    for name in ("setup.py", "pyproject.toml"):
        shutil.copy(ROOT / name, src)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, src / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    venv = where / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", "--without-pip",
                    str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    ours = next(p for p in site.getsitepackages() if p.startswith(sys.prefix))
    Path(purelib, "hpn-deps.pth").write_text(ours + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-index", "--no-deps", "--no-build-isolation", str(src)],
                   check=True, timeout=300, capture_output=True)
    return python


def run(argv: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def test_a_user_outside_the_tree_brings_up_runs_and_tests_their_own(tmp_path):
    python = fresh_venv(tmp_path)
    user = tmp_path / "user"
    user.mkdir()
    for example, mine in (("custom_family.py", "my_family.py"), ("custom_policy.py", "my_policy.py"),
                          ("custom_scenario.py", "my_scenario.py")):
        shutil.copy(EXAMPLES / example, user / mine)
    (user / "test_mine.py").write_text(USER_TEST.replace("VENV", repr(str(tmp_path / "venv"))))
    cli = str(python.parent / "hpn-testbed")
    where = run([str(python), "-c", "import testbed, controller as c; print(testbed.__file__, c.__file__)"],
                user)
    assert where.stdout.startswith(str(tmp_path / "venv")) and str(ROOT) not in where.stdout, where.stdout

    up = run([cli, "up", "dualroot", "--custom", "my_family.py", "--custom", "my_policy.py",
              "--policy", "first-port", "--check", "--json"], user)
    assert up.returncode == 0, up.stdout + up.stderr
    checks = json.loads(up.stdout)["result"]["checks"]
    assert checks and all(c["passed"] for c in checks), checks

    scenario = run([cli, "run", "ecmp-spread", "--custom", "my_scenario.py", "--quick", "--json",
                    "--out", str(tmp_path / "out")], user)
    shown = json.loads(scenario.stdout)
    assert scenario.returncode in (0, 1, 3) and shown["ok"], scenario.stdout + scenario.stderr
    (result,) = shown["result"]
    assert result["scenario"] == "ecmp-spread", result
    assert result["verdict"] in ("reproduced", "not reproduced"), result
    assert (tmp_path / "out" / "ecmp-spread.json").is_file()

    tested = run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_mine.py"], user)
    assert tested.returncode == 0 and "1 passed" in tested.stdout, tested.stdout + tested.stderr
