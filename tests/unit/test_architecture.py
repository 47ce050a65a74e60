"""The architecture, enforced: each layer imports only the layers below it; modules and
functions stay small enough to read.

    inhost < core < model < emulation < workload < measure < (cli, experiments, scenarios)
    inhost: the programs that run in hosts, standard library only (tests/unit/test_inhost.py)
    controller: core and model only (the emulation runs it as a process, never imports it)

Read from the import statements of every module (the AST, nothing is imported), so a lazy
import inside a function counts as much as one at the top. No two modules may import each
other, directly or around a loop, inside a layer too (test_no_import_cycle).
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ORDER = ["testbed.inhost", "testbed.core", "testbed.model", "testbed.emulation", "testbed.workload",
         "testbed.measure", "top"]
ALLOWED = {layer: set(ORDER[:i + 1]) for i, layer in enumerate(ORDER)}
ALLOWED["controller"] = {"testbed.core", "testbed.model", "controller"}
ALLOWED["top"] |= {"controller", "scenarios"}
MAX_LINES = 400


def layer_of(module: str) -> str | None:
    """The layer of an internal module name, or None for a library."""
    for layer in ORDER[:-1]:
        if module == layer or module.startswith(layer + "."):
            return layer
    if module.split(".")[0] == "controller":
        return "controller"
    if module.split(".")[0] in ("testbed", "scenarios"):
        return "top"     # testbed.cli, testbed.experiments, testbed.__main__, scenarios.*
    return None


def modules():
    for package in ("testbed", "controller", "scenarios"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            name = ".".join(p for p in rel.parts if p != "__init__")
            yield name, path


def imported_from(node: ast.ImportFrom, path: Path, name: str) -> str:
    """The module a `from ... import` statement names, relative ones resolved."""
    if not node.level:
        return node.module
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


def imported(path: Path, name: str):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = imported_from(node, path, name)
            yield target
            # `from testbed.model import policies` imports the module testbed.model.policies
            yield from (f"{target}.{a.name}" for a in node.names)


@pytest.mark.parametrize("name,path", list(modules()), ids=lambda x: str(x))
def test_imports_go_down_only(name, path):
    mine = layer_of(name)
    wrong = sorted({t for t in imported(path, name)
                    if layer_of(t) and layer_of(t) not in ALLOWED[mine]})
    assert not wrong, f"{name} ({mine}) imports from a layer above it: {wrong}"


def test_layer_of_names_every_package():
    assert layer_of("testbed.model.routing") == "testbed.model"
    assert layer_of("testbed.emulation.build") == "testbed.emulation"
    assert layer_of("testbed.cli") == "top"
    assert layer_of("testbed.experiments.runner") == "top"
    assert layer_of("testbed.inhost.agent") == "testbed.inhost"
    assert layer_of("testbed.scenario.base") == "top"
    assert layer_of("controller.app") == "controller"
    assert layer_of("mininet.net") is None


def test_the_check_catches_an_upward_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from testbed.emulation.build import Emulation\n")
    assert "testbed.emulation.build" in set(imported(bad, "testbed.model.bad"))


@pytest.mark.parametrize("name,path", list(modules()), ids=lambda x: str(x))
def test_no_module_over_400_lines(name, path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{name} has {lines} lines: split it"


MAX_FUNCTION_LINES = 60
# Functions exempt from the length rule, each for a stated reason: (module, function) -> why.
EXEMPT_FUNCTIONS: dict[tuple[str, str], str] = {}


def long_functions(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                yield node.name, length


@pytest.mark.parametrize("name,path", list(modules()), ids=lambda x: str(x))
def test_no_function_over_60_lines(name, path):
    long = [(f, n) for f, n in long_functions(path) if (name, f) not in EXEMPT_FUNCTIONS]
    assert not long, f"{name}: functions over {MAX_FUNCTION_LINES} lines: {long}"


def module_imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules of `known` that `name` imports. `from P import m` names the module P.m when
    there is one (a package's __init__ is not imported for it, in the sense that matters here:
    Python loads a parent package first anyway, so that edge is never a cycle), else P."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            target = imported_from(node, path, name)
            found |= {f"{target}.{a.name}" if f"{target}.{a.name}" in known else target
                      for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    owners = set()
    for module in found:            # a name inside a module: that module
        while module and module not in known:
            module = module.rpartition(".")[0]
        if module and module != name:
            owners.add(module)
    return owners


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of `graph` (module -> modules it imports): its strongly connected
    components of more than one module (Tarjan's algorithm, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root, imports in graph.items():
        if root in index:
            continue
        work = [(root, iter(sorted(imports)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = stack[stack.index(node):]
                    del stack[stack.index(node):]
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in stack:
                low[node] = min(low[node], index[child])
    return found


def import_graph() -> dict[str, set[str]]:
    paths = dict(modules())
    return {name: module_imports(path, name, set(paths)) for name, path in paths.items()}


def test_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles (break each: move what both need into a module of its own): " + \
        "; ".join(" <-> ".join(c) for c in found)


def test_the_cycle_check_finds_a_cycle_and_only_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"b"}}) == []


def test_the_cycle_check_counts_lazy_imports(tmp_path):
    (tmp_path / "a.py").write_text("def f():\n    from testbed.b import thing\n")
    (tmp_path / "b.py").write_text("from testbed import a\n")
    known = {"testbed.a", "testbed.b"}
    graph = {n: module_imports(tmp_path / f"{n[-1]}.py", n, known) for n in known}
    assert graph == {"testbed.a": {"testbed.b"}, "testbed.b": {"testbed.a"}}
    assert cycles(graph) == [["testbed.a", "testbed.b"]]


ROOMS = {"cluster": "one fabric across servers", "faults": "fault kinds and their injection",
         "control": "the controller process, users' apps, the watchdog",
         "run": "a run's bookkeeping: state, processes, listing, teardown, keep",
         "net": "this machine's kernel plumbing"}
MAX_TOP_MODULES = 12


def test_the_emulation_is_in_rooms():
    """testbed/emulation/: the builder at the top (at most 12 modules), everything else in a room
    whose name says what it holds; no module outside the rooms and the top."""
    emulation = ROOT / "testbed" / "emulation"
    top = sorted(p.name for p in emulation.glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, f"{len(top)} modules at the top of testbed/emulation: {top}"
    rooms = sorted(p.name for p in emulation.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert rooms == sorted(ROOMS), rooms
    for room in ROOMS:
        assert (emulation / room / "__init__.py").read_text().startswith('"""'), f"{room}: say what it holds"
        assert not [p for p in (emulation / room).iterdir() if p.is_dir() and p.name != "__pycache__"]


def test_only_the_cluster_room_reads_a_run_spread_over_servers():
    """What a cluster run recorded is the cluster room's to read (cluster/parts.py: spread,
    teardown_step, attached); teardown, trace and capture ask it. The state file's one reader
    (run/runstate.py) checks the field's type, as it does every field's."""
    readers = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "testbed").rglob("*.py")
                     if "emulation/cluster" not in str(p) and not str(p).endswith("run/runstate.py")
                     and ('data.get("servers")' in p.read_text() or 'data["servers"]' in p.read_text()))
    assert not readers, readers


def test_no_class_attribute_holds_a_run():
    """A host's run state is its own (FabricHost(run_state=...)), not a class attribute the
    builder sets for every host of every run."""
    from testbed.emulation.hosts import FabricHost
    assert "run_state" not in vars(FabricHost)


@pytest.mark.parametrize("name,path", [(n, p) for n, p in modules() if n.startswith("testbed")],
                         ids=lambda x: str(x))
def test_the_library_imports_nothing_of_the_claims(name, path):
    """testbed/ is the library the claims (scenarios/) are written with: it finds them by name
    (testbed/scenario/catalog.py), as it finds a plug-in's, and imports none of them."""
    wrong = sorted(t for t in imported(path, name) if t.split(".")[0] == "scenarios")
    assert not wrong, f"{name} imports {wrong}"


def test_the_validity_rule_has_one_home():
    """testbed/measure/validity.py alone compares a busy figure with BUSY_LIMIT; a judge states its
    busy figures once (Judgement(busy=...)), never as a second cpu_busy= beside its verdict."""
    for name, path in modules():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Judgement":
                assert "cpu_busy" not in {k.arg for k in node.keywords}, f"{name}: Judgement(cpu_busy=)"
            if isinstance(node, ast.Compare) and name != "testbed.measure.validity":
                names = {getattr(n, "id", getattr(n, "attr", None)) for n in ast.walk(node)}
                assert "BUSY_LIMIT" not in names, f"{name} applies the validity rule itself"
