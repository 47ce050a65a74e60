"""The tree passes `ruff check` with the repository's ruff.toml (rules pinned there), so that
lint is part of `make test` rather than a step someone remembers. ruff is a test dependency
(setup.py's extras); its console script sits next to the interpreter running the tests.
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUFF = str(Path(sys.executable).with_name("ruff"))


def test_the_tree_passes_ruff_with_the_repository_settings():
    proc = subprocess.run([RUFF, "check", "--no-cache", "--config", str(ROOT / "ruff.toml"),
                           "--output-format", "concise", str(ROOT)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
