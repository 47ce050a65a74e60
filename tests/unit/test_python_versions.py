"""The oldest Python the code needs is the one setup.py promises (3.10), read by vermin from the
source: a 3.11-only import (tomllib, typing.Self) or syntax anywhere in the tree fails here,
whatever Python the tests run on. Also: the build system is declared (pyproject.toml), so that
`pip install` never takes the legacy setup.py path into whatever setuptools a venv holds.
"""
import re
import subprocess
import sys
from pathlib import Path

from testbed.core.compat import tomllib

ROOT = Path(__file__).resolve().parents[2]
VERMIN = str(Path(sys.executable).with_name("vermin"))   # its console script (no __main__)
PACKAGES = ("testbed", "controller", "scenarios", "tests", "bench", "setup.py")


def promised() -> str:
    m = re.search(r'python_requires=">=(\d+\.\d+)"', (ROOT / "setup.py").read_text())
    assert m, "setup.py has no python_requires"
    return m.group(1)


def test_the_code_needs_no_newer_python_than_setup_py_promises():
    assert promised() == "3.10"
    proc = subprocess.run([VERMIN, f"-t={promised()}-", "--violations",
                           "--no-tips", "--eval-annotations", "--no-parse-comments",
                           *[str(ROOT / p) for p in PACKAGES]],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Minimum required versions: {promised()}" in proc.stdout, proc.stdout


def test_vermin_catches_what_this_test_is_for(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import tomllib\nfrom typing import Self\n")
    proc = subprocess.run([VERMIN, "-t=3.10-", "--violations", "--no-tips",
                           str(bad)], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "'tomllib' module requires" in proc.stdout and "typing.Self" in proc.stdout


def test_the_build_system_is_declared():
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    assert build["build-backend"] == "setuptools.build_meta"
    assert any(r.startswith("setuptools") for r in build["requires"])
