"""The CLI's `help fault` is the fault registry's: every registered kind (one of the user's own
too, registered after import) with its usage and help, its repair word, and `help fault KIND`
lists a kind's arguments from its declaration. No fabric: the help is text."""
from __future__ import annotations

import pytest

from testbed.cli.shell import cli
from testbed.cli.shell.cli import FabricCLI
from testbed.core.errors import ParamError
from testbed.emulation.faults import registry as fault_registry
from testbed.emulation.faults.kinds import PORT, Arg, FaultKind


class Sever(FaultKind):
    """A user's own kind, registered after the shell's modules were imported."""
    name, help = "sever", "a cable cut for good"
    args = (Arg("port", PORT, "the cable to cut", positional=True),
            Arg("delay", float, "s before it is cut", 0.0, bounds=(0.0, 10.0)))

    def inject(self, faults, port, delay):
        return faults.link_down(faults.link(port))


@pytest.fixture
def sever():
    kind = fault_registry.register(Sever())
    yield kind
    fault_registry.unregister(kind.name)


def help_text(monkeypatch, line: str) -> str:
    said = []
    monkeypatch.setattr(cli, "output", said.append)
    FabricCLI.do_help(FabricCLI.__new__(FabricCLI), line)
    return "".join(said)


def test_help_fault_lists_every_registered_kind(monkeypatch, sever):
    text = help_text(monkeypatch, "fault")
    for kind in fault_registry.kinds():
        assert f"fault {kind.name}" in text and kind.help in text, kind.name
        if kind.repair_word:
            assert f"fault {kind.repair_word}" in text
    assert "fault sever [--delay DELAY] PORT" in text and "a cable cut for good" in text
    assert "fault repair" in text and "fault list" in text


def test_help_fault_kind_lists_its_arguments(monkeypatch, sever):
    text = help_text(monkeypatch, "fault sever")
    assert "the cable to cut" in text and "--delay" in text and "(default 0.0, 0.0 to 10.0)" in text
    assert "repairs link-down" in help_text(monkeypatch, "fault link-up")
    with pytest.raises(ParamError, match="no fault kind 'nosuch'; known: link-down"):   # onecmd: one line
        help_text(monkeypatch, "fault nosuch")


def test_the_command_list_still_summarises_fault(monkeypatch):
    text = help_text(monkeypatch, "")
    assert "fault         Inject a fault into the fabric (undone on exit), or list them." in text
