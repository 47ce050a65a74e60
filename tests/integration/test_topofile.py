"""A fabric from a topology file (examples/three-tier.toml: three tiers, two zones joined by one
thin core trunk, a dual-ToR host; no family makes it) comes up on real OVS with the real
controller and passes the bring-up checks of `up --check`, routed like any family."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "three-tier.toml"

pytestmark = pytest.mark.integration


def test_a_topology_file_passes_up_check():
    done = subprocess.run([sys.executable, "-m", "testbed", "up", "file", "--set",
                           f"topology={EXAMPLE}", "--check", "--json"], check=False,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    checks = json.loads(done.stdout)["result"]["checks"]
    assert [c["name"] for c in checks] == ["wiring", "reachability", "top-tier TCP",
                                         "bond spreading"]   # a2: one NIC, two ports
    assert all(c["passed"] for c in checks), checks
