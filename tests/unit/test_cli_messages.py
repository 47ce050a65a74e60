"""What the command line says to a newcomer: every option explained, a missing subcommand and an
unknown argument named by the command they were given to, counts with thousands separators, a
ToR below 1:1 explained, doctor's closing "ready" line."""
import pytest

from testbed.cli import build_parser, every_parser, main


def test_every_json_option_has_help():
    missing = [parser.prog for parser in every_parser(build_parser()) for a in parser._actions
               if "--json" in a.option_strings and not a.help]
    assert not missing, missing


def test_every_positional_of_servers_up_has_help():
    parser = next(p for p in every_parser(build_parser()) if p.prog.endswith("servers up"))
    assert all(a.help for a in parser._actions if not a.option_strings)


@pytest.mark.parametrize("argv,says", [
    (["topo"], "hpn-testbed: topo: choose a command: budget, show"),
    (["servers"], "hpn-testbed: servers: choose a command: up, down, list"),
    ([], "hpn-testbed: choose a command: doctor, topo"),
    (["clean", "--bogus"], "hpn-testbed: clean: unrecognized arguments: --bogus"),
    (["topo", "show", "hpn", "--bogus"], "hpn-testbed: topo show: unrecognized arguments: --bogus"),
])
def test_a_missing_command_or_unknown_argument_names_the_command(argv, says, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith(says) and len(err.strip().splitlines()) == 1, err
    assert "_command" not in err


def test_topo_show_counts_with_separators_and_explains_a_tor_below_one_to_one(capsys):
    assert main(["topo", "show", "hpn", "--preset", "segment"]) == 0
    assert "1,088 NICs" in capsys.readouterr().out
    assert main(["topo", "show", "hpn"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "0.5:1" in out and "below 1:1 (tor): more capacity up than down" in out


def test_doctor_ends_with_ready_when_nothing_is_missing(capsys, monkeypatch):
    from testbed.emulation.net import system
    monkeypatch.setattr(system, "features", lambda: {"htb": True, "multipath_routes": True,
                                                     "bonding": False, "netem": False,
                                                     "dummy_link": False, "ifb_link": True})
    monkeypatch.setattr(system, "versions", lambda: {"ovs": "3.1", "mininet": "2.3", "os_ken": "4",
                                                     "iperf3": "3.12"})
    monkeypatch.setattr(system, "ovs_running", lambda: True)
    monkeypatch.setattr(system, "datapath", lambda: "netdev")
    monkeypatch.setattr(system, "bond_backend", lambda: "multipath")
    monkeypatch.setattr(system, "one_way_fault_backend", lambda: "nftables")
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    last = " ".join(out[out.rindex("ready:"):].split())     # the closing line, however wrapped
    assert last.startswith("ready: fabrics can be built") and last.endswith("NICs on ifb links)")
