"""A throwaway routing policy, defined here and registered with one call: what adding a policy
takes (a RoutingPolicy in one module, one register()). The same file is what a user's
`--custom FILE.py` would be: the controller, a process of its own, loads it again
(testbed.model.policies.load_file) because the spec names the file that defines the policy.

"first-path": every switch sends each destination out of its first next hop, never hashing.
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.model import make_fabric, policies
from testbed.model.contract import PRIO_ROUTE, TABLE_FORWARD
from testbed.model.routing import Route


class FirstPath(policies.RoutingPolicy):
    name = "first-path"
    summary = "always the first next hop"

    def routes(self, fabric, routes, core, opts):
        return [Route(r.switch, r.ip, r.ports[:1], r.deliver_mac) for r in routes]


policies.register(FirstPath())


def test_up_accepts_it_and_it_computes_routes():
    from testbed.cli import build_parser
    from testbed.cli.up import routing_options
    fab = make_fabric("clos3")
    args = build_parser().parse_args(["up", "clos3", "--policy", "first-path"])
    assert routing_options(args, fab) == {"policy": "first-path"}
    routing = policies.normalize(fab, {"policy": "first-path"})
    routes = policies.all_routes(fab)
    out = routing.routes(fab, routes, routing.core_rules(fab, routes))
    assert [r.ports for r in out] == [r.ports[:1] for r in routes]
    assert policies.source("first-path") == str(Path(__file__).resolve())


@pytest.mark.integration
def test_up_check_brings_it_up():
    """`up --check` in a process that loads this file first (as --custom will)."""
    run = (f"from testbed.model import policies; policies.load_file({__file__!r}); "
           "from testbed.cli import main; "
           "raise SystemExit(main(['up', 'clos3', '--policy', 'first-path', '--check', '--json']))")
    proc = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"passed": true' in proc.stdout and '"passed": false' not in proc.stdout


@pytest.mark.integration
def test_the_controller_runs_it(up):
    """The controller loads this file and installs one port per route: no select group."""
    emu = up("clos3", routing={"policy": "first-path"})
    assert emu.status().policy["policy"] == "first-path"
    for sw in emu.fabric.switches:
        flows = emu.ofctl("dump-flows", sw, f"table={TABLE_FORWARD}")
        assert re.search(rf"priority={PRIO_ROUTE},", flows)
        assert not re.search(rf"priority={PRIO_ROUTE},.*actions=group:", flows), sw
