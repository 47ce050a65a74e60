"""The pytest plugin (testbed/pytest_plugin.py, the `pytest11` entry point): installed with the
project, it gates a user's fabric tests: where root or Open vSwitch is missing they are skipped
with the reason, and under CI=true that skip fails. The example test file is the user's test."""
import os
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NO_FABRIC = 'import testbed.pytest_plugin as p\np._problem[:] = ["hpn-testbed: a fabric needs root"]\n'


def test_the_plugin_is_an_entry_point():
    assert [e.value for e in entry_points(group="pytest11") if e.name == "hpn_testbed"] == \
        ["testbed.pytest_plugin"]


def user_run(tmp_path, ci: str):
    """The example test file alone in a directory (no project conftest), where no fabric can
    come up (a conftest says so), run by a fresh pytest."""
    shutil.copy(EXAMPLES / "test_my_fabric.py", tmp_path)
    shutil.copy(EXAMPLES / "three-tier.toml", tmp_path)
    (tmp_path / "conftest.py").write_text(NO_FABRIC)
    env = {**os.environ, "CI": ci}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           "test_my_fabric.py"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.parametrize("ci, status, outcome", [("", 0, "2 skipped"), ("true", 1, "2 errors")])
def test_no_fabric_here_skips_and_fails_under_ci(tmp_path, ci, status, outcome):
    done = user_run(tmp_path, ci)
    assert done.returncode == status, done.stdout
    assert outcome in done.stdout and "a fabric needs root" in done.stdout
    if not ci:      # the skip is reported at the user's test, not inside the plugin
        assert "test_my_fabric.py:" in done.stdout and "pytest_plugin.py" not in done.stdout, done.stdout
