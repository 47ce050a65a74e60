"""The testbed's pytest plugin, for users' own CI (registered as a `pytest11` entry point, so an
installed hpn-testbed makes it available to any pytest run; docs/extending.md shows it).

    pytestmark = pytest.mark.hpn_fabric("hpn", hosts=2)          # or topology="fab.toml"

    def test_reachable(hpn_fabric):                               # a running Emulation
        assert all(c.passed for c in bringup.run_all(hpn_fabric))

The marker names the fabric: a family and its parameters (`--set` keys), or `topology=FILE.toml`
(the file family; a relative path is relative to the test file), optionally `routing={...}` (as
`up --policy/--ecmp/--core`) and `custom=["plugin.py"]` (as `--custom`). `hpn_fabric` brings it
up for one test, `hpn_fabric_module` once per module; `hpn_up(family, **settings)` brings up more.
Every fabric is torn down after its test or module, whatever the test did, and checked: anything
of it left behind (an interface, a bridge, its run state, a process) fails the teardown.

A test with the marker or one of the fixtures needs root and an answering Open vSwitch: it is
skipped with the reason where they are missing, and under CI=true that skip is a failure (a CI
runner that cannot run the test must not pass it silently).
"""
from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

MARKER = "hpn_fabric"
FIXTURES = ("hpn_fabric", "hpn_fabric_module", "hpn_up")
_problem: list[str | None] = []


def pytest_configure(config):
    config.addinivalue_line("markers", f"{MARKER}(family='hpn', topology=None, routing=None, "
                                       "custom=(), **settings): the fabric the hpn_fabric fixtures "
                                       "bring up; needs root and Open vSwitch (skip, or fail "
                                       "under CI=true)")


def needs_fabric(item) -> bool:
    return item.get_closest_marker(MARKER) is not None or bool(
        set(FIXTURES) & set(getattr(item, "fixturenames", ())))


def problem() -> str | None:
    """Why a fabric cannot come up here (not root, Open vSwitch not answering), or None."""
    if not _problem:
        if os.geteuid() != 0:
            _problem.append("hpn-testbed: a fabric needs root")
        else:
            try:
                ok = subprocess.run(["ovs-vsctl", "--timeout=3", "show"], capture_output=True,
                                    timeout=15, check=False).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                ok = False
            _problem.append(None if ok else "hpn-testbed: Open vSwitch is not running "
                                            "(`ovs-vsctl show` fails)")
    return _problem[0]


def ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def pytest_collection_modifyitems(items):
    """A fabric test where no fabric can come up is marked skipped with the reason, so that
    pytest reports the skip at the test's own line, not at this plugin's."""
    for item in items:
        if needs_fabric(item) and problem():
            item.add_marker(pytest.mark.skip(reason=problem()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if ci() and report.skipped and not hasattr(report, "wasxfail") and needs_fabric(item):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"       # in setup, pytest counts it as an error
        report.longrepr = f"skipped under CI=true: {str(reason).removeprefix('Skipped: ')}"


def fabric_of(node, family: str = "hpn", topology: str | None = None, routing=None, custom=(),
              **settings):
    """(Fabric, Options) of a marker's arguments, checked by the model before anything exists."""
    from testbed.core import plugins
    from testbed.emulation.build import Options
    from testbed.model import make_fabric
    from testbed.model.policies import normalize
    here = Path(str(node.path)).parent
    plugins.load_all(here / c for c in ([custom] if isinstance(custom, str) else custom))
    if topology is not None:
        family, settings = "file", {**settings, "topology": str(here / topology)}
    fab = make_fabric(family, settings)
    normalize(fab, routing or {})
    return fab, Options(routing=routing or {})


@contextlib.contextmanager
def running(fab, options):
    """The fabric up (on this machine), torn down when the block ends, however it ends; then
    nothing of it may be left (AssertionError naming what is: a teardown that did not finish)."""
    from testbed.emulation.factory import make_emulation
    with make_emulation(fab, options) as emu:
        yield emu
    left = leftovers(emu)
    assert not left, f"left behind: {left}"


def leftovers(emu) -> list[str]:
    """What of a torn-down emulation still exists: its interfaces in the root namespace, its
    bridges, its run state, its processes (must be nothing)."""
    from testbed.emulation.net import netdevs
    names = set(os.listdir("/sys/class/net"))
    left = [f"interface {i}" for i in emu.site.root_intfs() if i in names]
    left += [f"bridge {b}" for b in netdevs.tagged_bridges(emu.run_id)]
    left += [f"bridge {b}" for b in set(emu.fabric.switches) & netdevs.all_bridges()]
    if emu.state.dir.exists():
        left.append(f"run state {emu.state.dir}")
    left += [f"process {pid} ({marker})" for pid, marker in emu.state.live_processes()]
    return left


def _marked(request):
    marker = request.node.get_closest_marker(MARKER)
    if marker is None:
        raise pytest.UsageError(f"{request.fixturename}: mark the test or module with "
                                f"@pytest.mark.{MARKER}(family, **settings) or (topology=FILE)")
    return fabric_of(request.node, *marker.args, **marker.kwargs)


@pytest.fixture
def hpn_fabric(request):
    """The marked fabric, up for this test (an Emulation), torn down after it."""
    if problem():
        pytest.skip(problem())
    with running(*_marked(request)) as emu:
        yield emu


@pytest.fixture(scope="module")
def hpn_fabric_module(request):
    """The marked fabric (module-level pytestmark), up once for the module's tests."""
    if problem():
        pytest.skip(problem())
    with running(*_marked(request)) as emu:
        yield emu


@pytest.fixture
def hpn_up(request):
    """hpn_up(family="hpn", topology=None, routing=None, custom=(), **settings) -> a running
    Emulation; every one is torn down after the test (in reverse order)."""
    if problem():
        pytest.skip(problem())
    with contextlib.ExitStack() as stack:
        def up(*args, **kwargs):
            return stack.enter_context(running(*fabric_of(request.node, *args, **kwargs)))
        yield up
