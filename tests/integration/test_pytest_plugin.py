"""A user's CI test (examples/test_my_fabric.py, using only the plugin's fixture and marker), run
by a fresh pytest in a directory of its own, brings its fabric up, passes and tears it down."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = pytest.mark.integration


def test_the_example_user_test_passes(tmp_path):
    shutil.copy(EXAMPLES / "test_my_fabric.py", tmp_path)
    shutil.copy(EXAMPLES / "three-tier.toml", tmp_path)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "test_my_fabric.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
