"""The guide's cheap commands, run as the guide shows them (README.md, docs/*.md): as root, from a
directory that holds the repository's files as a clone does, each must exit 0 with no traceback.

Cheap: the model (`topo`), `list`, `doctor`, `lab`, `ps`, `clean`, `servers list`, `--version`,
experiment files with `--check` (tests/doc_commands.py, CHEAP), and the quick start's one
bring-up, `up hpn --check` (about 10 s). Every other command is parsed and
checked without root by tests/unit/test_doc_commands.py, and tests/doc_commands.py says why it is
not run here and which test covers what it does. Run it under the fabric lock on a shared
machine (`clean` and `ps` look at the machine's runs).
"""
from __future__ import annotations

import glob
import subprocess
import sys
from pathlib import Path

import pytest

from tests import doc_commands

pytestmark = pytest.mark.integration

ROOT = doc_commands.ROOT
BIN = Path(sys.executable).parent
CHEAP = [c for c in doc_commands.commands() if c.testbed and doc_commands.parse_only(c) is None]


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A directory with the repository's top-level entries (links to them), where the guide's
    relative paths (experiments/..., labs/...) resolve and its pictures and out/ are written."""
    where = tmp_path_factory.mktemp("clone")
    for entry in ROOT.iterdir():
        if entry.name not in (".git", ".venv", "out"):
            (where / entry.name).symlink_to(entry)
    return where


def test_the_cheap_commands_are_the_ones_the_brief_names():
    heads = {c.argv[0] for c in CHEAP}
    assert heads >= {"topo", "list", "doctor", "lab", "run"}, heads
    assert all("--check" in c.argv for c in CHEAP if c.argv[0] == "run")


@pytest.mark.parametrize("cmd", CHEAP, ids=str)
def test_the_guide_command_runs(cmd, clone):
    argv = []
    for word in cmd.argv:          # globs as a shell in the clone expands them
        argv += sorted(glob.glob(word, root_dir=clone)) if "*" in word else [word]
    proc = subprocess.run([str(BIN / "hpn-testbed"), *argv], cwd=clone, capture_output=True, text=True,
                          timeout=300, check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, \
        f"{cmd}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr
    for word in argv:
        if word.endswith((".png", ".svg", ".pdf")):
            assert (clone / word).stat().st_size > 0, f"{cmd}: no picture {word}"
