"""The programs that run inside hosts (testbed/inhost/) import only the standard library and
each other: they start in every host, fast, and load nothing of the model or the emulation.
Read from the import statements (the AST), so a lazy import inside a function counts too."""
import ast
import sys
from pathlib import Path

import pytest

INHOST = Path(__file__).resolve().parents[2] / "testbed" / "inhost"
# Libraries outside the standard one, each for a stated reason: name -> why.
LIBRARIES = {"pyroute2": "netlink, for queue backlog (ports.py); the standard library has no netlink client"}


def imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert not node.level, f"{path.name}: a relative import (python -m runs it as __main__)"
            yield node.module


def allowed(module: str) -> bool:
    top = module.split(".")[0]
    return (top in sys.stdlib_module_names or top in LIBRARIES
            or module == "testbed.inhost" or module.startswith("testbed.inhost."))


@pytest.mark.parametrize("path", sorted(INHOST.glob("*.py")), ids=lambda p: p.name)
def test_inhost_imports_only_the_standard_library(path):
    wrong = sorted({m for m in imports(path) if not allowed(m)})
    assert not wrong, f"testbed/inhost/{path.name} imports {wrong}: in-host programs use the standard library"


def test_the_check_catches_a_testbed_import():
    assert not allowed("testbed.emulation.net.counters") and not allowed("scapy")
    assert allowed("json") and allowed("testbed.inhost.frames")


def test_the_programs_are_all_here():
    assert {p.stem for p in INHOST.glob("*.py")} >= {"detector", "frames", "portstream", "agent", "blaster"}
