"""A policy's own options from the command line and from experiment files (issue 40 item 12):
`up --policy adaptive --set interval=2` sets the policy's interval (it used to blame the
family), `[routing] interval = 2` likewise; a bad value names the option; an option of another
policy is refused in one line. In-process, with the fuzz tests' tripwires: nothing is built."""
import dataclasses

import pytest

from testbed.cli import main
from testbed.cli.up import split_settings

from .conftest import Tripped, trip_past_checks


class Args:
    family, preset, policy = "hpn", None, "adaptive"

    def __init__(self, *sets):
        self.set = list(sets)


def test_a_key_the_family_lacks_but_the_policy_declares_is_a_routing_option():
    fabric, routing = split_settings(Args("nics=2", "interval=2", "hot=0.5"))
    assert "nics" in fabric and "interval" not in fabric
    assert set(routing) == {"interval", "hot"}


@pytest.mark.parametrize("argv, says", [
    (["--policy", "adaptive", "--set", "interval=abc"], "routing interval='abc': expected a number"),
    (["--policy", "adaptive", "--set", "interval=1000"], "must be between"),
    (["--set", "interval=2"], "interval"),             # ecmp has no interval: still refused
])
def test_a_bad_policy_option_on_the_command_line_is_one_line(argv, says, monkeypatch, capsys):
    trip_past_checks(monkeypatch)
    assert main(["up", "hpn", *argv, "--check"]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1, err


def test_a_good_policy_option_gets_past_the_checks(monkeypatch):
    trip_past_checks(monkeypatch)
    with pytest.raises(Tripped):
        main(["up", "hpn", "--policy", "adaptive", "--set", "interval=2", "--check"])


EXPERIMENT = """name = "x"
[fabric]
family = "hpn"
[routing]
policy = "adaptive"
{extra}
[[traffic]]
kind = "iperf3"
from = "p0s0h0-n0"
to = "p0s0h1-n0"
"""


@pytest.mark.parametrize("extra, ok", [("interval = 2", True), ("interval = -1", False),
                                       ("bogus = 1", False)])
def test_an_experiment_files_routing_table_takes_the_policys_options(extra, ok, tmp_path, capsys):
    path = tmp_path / "e.toml"
    path.write_text(EXPERIMENT.format(extra=extra))
    status = main(["run", str(path), "--check"])
    err = capsys.readouterr().err
    assert (status == 0) is ok, err


def _policy(name, routes):
    from testbed.model.policies import RoutingPolicy

    class P(RoutingPolicy):
        summary = "a throwaway policy of the tests"

        def routes(self, fabric, base, core, opts):
            return routes(base)
    P.name = name
    return P()


@pytest.mark.parametrize("name, routes, says", [
    ("to-nowhere", lambda base: [dataclasses.replace(r, ports=(999,)) for r in base],
     "leaves by ports [999]: ports it does not have"),
    ("no-such-switch", lambda base: [dataclasses.replace(r, switch="ghost") for r in base],
     "a switch this fabric does not have"),
    ("crashes", lambda base: 1 / 0, "its routes raised ZeroDivisionError"),
])
def test_a_policy_whose_routes_leave_the_fabric_is_refused_before_anything_is_built(
        name, routes, says, monkeypatch, capsys, registries_restored):
    from testbed.model.policies import register
    register(_policy(name, routes))
    trip_past_checks(monkeypatch)
    assert main(["up", "hpn", "--policy", name, "--check"]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1, err
