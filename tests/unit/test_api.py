"""The stable Python API (docs/api.md): `from testbed import NAME` gives exactly the names pinned
here, each with a docstring of its own and typed signatures, imported only when first used so
that `import testbed` stays cheap."""
import inspect
import subprocess
import sys

import pytest

import testbed

STABLE = {
    "Budget", "Number", "Route", "Size",
    "Emulation", "Fabric", "FaultArg", "FaultKind", "Faults", "Family", "Flow", "Job", "Judgement", "Knobs",
    "Options", "ParamError", "Params", "RoutingPolicy", "Sampler", "Scenario", "TestbedError",
    "load_plugin", "make_emulation", "make_fabric", "ping_all", "port_bytes",
    "received_mbps", "register_family", "register_fault_kind", "register_policy",
    "register_scenario", "run_checks", "run_flows", "run_job", "verdict",
}


def test_the_exported_names_are_pinned():
    """Adding a name is a decision (docs/api.md lists it); removing one breaks users."""
    assert set(testbed.__all__) == STABLE
    assert testbed.__all__ == sorted(testbed._EXPORTS)


@pytest.mark.parametrize("name", sorted(STABLE))
def test_each_name_has_a_docstring_of_its_own_and_typed_signature(name):
    obj = getattr(testbed, name)
    doc = inspect.getdoc(obj) or ""
    assert doc and not doc.startswith(f"{obj.__name__}("), f"{name}: no docstring (dataclass default)"
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        sig = inspect.signature(obj)
        untyped = [p.name for p in sig.parameters.values() if p.annotation is p.empty
                   and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        assert not untyped and sig.return_annotation is not sig.empty, f"{name}{sig}"


def test_the_names_are_the_modules_objects():
    from testbed.emulation.factory import make_emulation
    from testbed.model.families import make_fabric, register
    assert testbed.make_fabric is make_fabric and testbed.register_family is register
    assert testbed.make_emulation is make_emulation
    assert "make_fabric" in dir(testbed)
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        testbed.nosuch  # noqa: B018


def test_import_testbed_imports_nothing_else_of_the_project():
    code = ("import sys, testbed; print(sorted(m for m in sys.modules "
            "if m.startswith(('testbed.', 'scenarios', 'controller'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_docstring_example_builds_the_model():
    fab = testbed.make_fabric("hpn", {"hosts": 2})
    assert isinstance(fab, testbed.Fabric) and len(fab.hosts) == 4
    with pytest.raises(testbed.ParamError, match="hosts=0"):
        testbed.make_fabric("hpn", {"hosts": 0})
