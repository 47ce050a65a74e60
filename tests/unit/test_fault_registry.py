"""The fault registry, walked: every registered fault kind is offered by the CLI's `fault`
command and by experiment files' [[fault]] tables, its arguments are checked the same way (the
same message) in both, and it injects and repairs on a fake emulation. A kind defined here,
registered with one call, is then accepted by the CLI's parser and by `run FILE.toml --check`;
a malformed one is refused with one line. (tests/integration/test_fault_kinds.py injects one
on a real fabric.)"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from testbed.cli import main
from testbed.cli.shell.args import Usage
from testbed.cli.shell.fabric import FabricCommands, fault_parser
from testbed.core.errors import ParamError
from testbed.emulation.faults import impair
from testbed.emulation.faults import registry as fault_registry
from testbed.emulation.faults.inject import Faults
from testbed.emulation.faults.kinds import PORT, SWITCH, Arg, ArgProblem, FaultKind
from testbed.emulation.net import system
from testbed.experiments import check
from testbed.model import make_fabric

FABRIC = make_fabric("hpn", {"nics": 3})
TOML = """name = "x"
[fabric]
family = "hpn"
nics = 3
[[traffic]]
kind = "iperf3"
from = "p0s0h0"
to = "p0s0h1"
seconds = 10
[[fault]]
at = 4.0
"""


class TwoPortsDown(FaultKind):
    """A throwaway kind: two cables down at once (a conduit cut), one handle for both."""
    name, help = "two-ports-down", "two cables down at once"
    args = (Arg("port", PORT, "the first cable", positional=True),
            Arg("other", PORT, "the second cable", positional=True))

    def rules(self, args: dict) -> None:
        if args["port"] == args["other"]:
            raise ArgProblem("other", "the same cable twice")

    def inject(self, faults, port: str, other: str):
        handles = [faults.link_down(faults.link(p)) for p in (port, other)]
        return faults.combined(f"{port} and {other} down", handles)


@pytest.fixture
def throwaway():
    kind = fault_registry.register(TwoPortsDown())
    yield kind
    fault_registry.unregister(kind.name)


class FakeEmu:
    """What Faults asks of an emulation, kept as state: the interfaces down, the qdiscs added."""

    def __init__(self, fabric):
        self.fabric, self.run_id, self.down, self.qdiscs, self.downs = fabric, "t-1", set(), set(), 0
        self.state, self.site = None, self     # the site (where it runs) answers for itself here
        self.options = SimpleNamespace(queue_bytes=48_000)

    def carrier_follows(self, link) -> bool:
        return True

    def switches_batch(self, command: str, lines: dict) -> None:
        for line in (line for node_lines in lines.values() for line in node_lines):
            _, _, intf, state = line.split()
            (self.down.add if state == "down" else self.down.discard)(intf)
            self.downs += state == "down"

    def run(self, owner: str, script: str) -> None:
        if "_impair_" in script:      # the impair kind's (net/impair.py): a loss table set, or cleared
            (self.qdiscs.add if "numgen" in script else self.qdiscs.discard)(f"impair {owner}")
            return
        words = script.split()
        (self.qdiscs.add if words[2] == "add" else self.qdiscs.discard)(words[4])


@pytest.fixture
def faults(monkeypatch):
    emu = FakeEmu(FABRIC)
    monkeypatch.setattr(system, "one_way_fault_backend", lambda: "tc-drop")
    monkeypatch.setattr(impair, "machine", lambda: {"netem": False, "htb": True, "nft_egress": True})
    monkeypatch.setattr(Faults, "_run", lambda self, owner, script: emu.run(owner, script))
    return Faults(emu)


def sample(arg: Arg):
    """A valid value of an argument, quick to play (a flap train at its shortest)."""
    if arg.type == PORT:
        return FABRIC.host_links()[0].a_intf
    if arg.type == SWITCH:
        return next(iter(FABRIC.switches))
    if arg.choices:
        return arg.choices[-1]
    return arg.bounds[0] if arg.bounds else arg.default


# kinds whose defaults alone are refused (an impairment of nothing): a valid value to start from
EXAMPLES = {"impair": {"loss": "2%", "rate": "100mbit"}}


def samples(kind: FaultKind) -> dict:
    """A valid value of each of `kind`'s arguments."""
    return {**{a.name: sample(a) for a in kind.args}, **EXAMPLES.get(kind.name, {})}


def words(kind: FaultKind, values: dict) -> str:
    """The CLI line for `values`: positional words in order, then --name VALUE."""
    positional = [str(values[a.name]) for a in kind.args if a.positional]
    options = [f"--{a.name} {values[a.name]}" for a in kind.args
               if not a.positional and values.get(a.name, "") != ""]
    return " ".join([kind.name, *positional, *options])


def shell_read(kind: FaultKind, values: dict) -> dict:
    """The CLI's reading of `fault KIND ...` (its parser, then the kind's checks)."""
    from testbed.cli.shell.fabric import fault_args
    typed = vars(fault_parser().parse(words(kind, values)))
    assert typed.pop("word") == kind.name
    return fault_args(kind, typed, FABRIC, "")


def toml_read(tmp_path, kind: FaultKind, values: dict):
    """An experiment file's reading of a [[fault]] table with `values`."""
    table = {"kind": kind.name, **values}
    if kind.lasts({a.name: sample(a) for a in kind.args}) is None:
        table["for"] = 3.0
    text = TOML + "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in table.items())
    path = tmp_path / "f.toml"
    path.write_text(text)
    return check.load(str(path)).faults[0]


def kinds():
    return fault_registry.kinds()


@pytest.mark.parametrize("kind", kinds(), ids=lambda k: k.name)
def test_every_kind_is_offered_by_the_shell_and_by_experiment_files(tmp_path, kind):
    values = samples(kind)
    assert shell_read(kind, values) == values
    fault = toml_read(tmp_path, kind, values)
    assert fault.kind == kind.name and fault.arguments == values


def out_of_range(arg: Arg) -> list:
    bad = ["x"] if arg.value_type is not str else []
    if arg.bounds:
        bad += [arg.bounds[0] - 1 if arg.value_type is int else arg.bounds[0] / 2, arg.bounds[1] * 2]
    if arg.choices:
        bad.append("sideways")
    if arg.type in (PORT, SWITCH):
        bad.append("nosuch-eth9")
    return bad


CASES = [(k, a, v) for k in kinds() for a in k.args for v in out_of_range(a)]


@pytest.mark.parametrize("kind,arg,value", CASES, ids=lambda x: getattr(x, "name", str(x)))
def test_the_shell_and_experiment_files_refuse_a_value_with_the_same_words(tmp_path, kind, arg, value):
    values = {**samples(kind), arg.name: value}
    with pytest.raises(Usage) as shell:
        shell_read(kind, values)
    with pytest.raises(ParamError) as toml:
        toml_read(tmp_path, kind, values)
    problem = str(toml.value).split(": [[fault]] 1: ", 1)[1]
    assert problem.startswith(f"{arg.name}: ") and problem in str(shell.value), (problem, str(shell.value))


def test_rules_across_arguments_are_the_kinds_own_in_both(tmp_path):
    flap = fault_registry.get("flap")
    values = {"port": sample(flap.args[0]), "count": 2, "period": 0.5, "down": 0.5}
    with pytest.raises(Usage, match="down: 0.5: must be shorter than period=0.5"):
        shell_read(flap, values)
    with pytest.raises(ParamError, match="down: 0.5: must be shorter than period=0.5"):
        toml_read(tmp_path, flap, values)


@pytest.mark.parametrize("kind", kinds(), ids=lambda k: k.name)
def test_every_kind_injects_and_repairs_on_a_fake(faults, kind):
    emu = faults.emu
    handle = kind.inject(faults, **kind.read(samples(kind), FABRIC))
    changed = emu.downs or emu.qdiscs
    assert changed, f"{kind.name} changed nothing"
    assert handle.note and handle.in_place == (kind.lasts({a.name: sample(a) for a in kind.args}) is None)
    handle.repair()
    handle.repair()                                   # twice: nothing more to undo
    assert not faults.in_place and not emu.down and not emu.qdiscs


def test_repair_all_undoes_every_kind_still_in_place(faults):
    for kind in kinds():
        kind.inject(faults, **kind.read(samples(kind), FABRIC))
    assert faults.in_place
    faults.repair_all()
    assert not faults.in_place and not faults.emu.down and not faults.emu.qdiscs


def test_a_kind_registered_with_one_call_is_in_the_shell_and_in_check(tmp_path, throwaway, faults, capsys):
    a, b = (l.a_intf for l in FABRIC.host_links()[:2])
    assert throwaway.name in fault_parser().format_usage()
    assert shell_read(throwaway, {"port": a, "other": b}) == {"port": a, "other": b}
    with pytest.raises(Usage, match="other: the same cable twice"):
        shell_read(throwaway, {"port": a, "other": a})
    path = tmp_path / "t.toml"
    path.write_text(TOML + f'kind = "two-ports-down"\nport = "{a}"\nother = "{b}"\nfor = 2.0\n')
    assert main(["run", str(path), "--check"]) == 0
    capsys.readouterr()
    path.write_text(TOML + f'kind = "two-ports-down"\nport = "{a}"\nfor = 2.0\n')
    assert main(["run", str(path), "--check"]) == 2
    assert "other is required" in capsys.readouterr().err
    # through the CLI's own command, on a fake emulation: one fault in place, then none
    shell = type("Shell", (FabricCommands,), {})()
    shell.emu, shell.fabric, shell.faults = faults.emu, FABRIC, faults
    shell.do_fault(f"two-ports-down {a} {b}")
    assert len(faults.in_place) == 1 and len(faults.emu.down) == 2
    shell.do_fault("repair")
    assert not faults.in_place and not faults.emu.down


class Good(FaultKind):
    name, help = "good-kind", "a kind as it should be"
    args = (Arg("port", PORT, "a cable", positional=True),)

    def inject(self, faults, port):
        return faults.link_down(faults.link(port))


def variant(**changes) -> FaultKind:
    return type("Variant", (Good,), changes)()


@pytest.mark.parametrize("kind,why", [
    (object(), "not a FaultKind"),
    (variant(name=""), "no name"),
    (variant(name="flap"), "'flap' is taken"),
    (variant(name="repair"), "'repair' is taken"),
    (variant(name="link-up"), "'link-up' is taken"),
    (variant(name="Two Words"), "not a lower-case word"),
    (variant(help="two\nlines"), "help must be one line"),
    (type("NoInject", (FaultKind,), {"name": "x", "help": "x"})(), "no inject method"),
    (variant(repair_word="good-up"), "no undo method"),
    (variant(args=[Arg("port", PORT, "a cable")]), "a tuple of Arg"),
    (variant(args=(Arg("at", float, "when"),)), "argument name 'at'"),
    (variant(args=(Arg("n", int, "n"), Arg("n", int, "n"))), "argument name 'n'"),
    (variant(args=(Arg("n", list, "n"),)), "type must be"),
    (variant(args=(Arg("n", int, "n", 0, bounds=(1, 5)),)), "its default 0 is refused"),
    (variant(args=(Arg("n", str, "n", bounds=(1, 5)),)), "bounds are"),
    (variant(args=(Arg("n", int, ""),)), "no help"),
], ids=lambda x: x if isinstance(x, str) else None)
def test_a_malformed_kind_is_refused_in_one_line(kind, why):
    before = fault_registry.REGISTRY.names()
    with pytest.raises(ParamError) as e:
        fault_registry.register(kind)
    assert why in str(e.value) and "\n" not in str(e.value)
    assert fault_registry.REGISTRY.names() == before


def test_good_kind_is_accepted_and_unregistered():
    fault_registry.register(Good())
    try:
        assert "good-kind" in fault_registry.REGISTRY.names()
    finally:
        fault_registry.unregister("good-kind")
    with pytest.raises(ParamError, match="no fault kind 'good-kind'; known: link-down"):
        fault_registry.get("good-kind")


def test_the_published_schema_has_the_registered_kinds():
    """docs/experiment.schema.json's [[fault]] is the registry's (spec.fault_schema): a kind
    added to the registry is added there by rewriting $defs.fault with fault_schema()."""
    import json
    from pathlib import Path

    from testbed.experiments.spec import fault_schema
    schema = json.loads((Path(__file__).resolve().parents[2] / "docs" / "experiment.schema.json").read_text())
    assert schema["$defs"]["fault"] == fault_schema()
