"""User-given text reaches rich literally (testbed/cli/output.py): a `[/x]` in a path, a run's
recorded family or a server's name prints as written, where it once raised rich's MarkupError;
and a terminal said to be 0 columns wide (COLUMNS=0) still gets the output."""
import json
import os

import pytest

from testbed.cli import main, output
from testbed.core import interrupts
from testbed.emulation.run import processes, runstate

ANSWERS = "lab = 1\ntor_host_ports = 128\n"


@pytest.fixture
def quiet(monkeypatch, tmp_path):
    monkeypatch.setattr(interrupts, "install", lambda: None)
    monkeypatch.setattr(runstate, "ROOT", tmp_path / "runs")
    monkeypatch.setenv("COLUMNS", "200")
    return tmp_path


def invoke(argv) -> int:
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


def test_lab_check_with_markup_in_the_answers_path(quiet, capsys):
    where = quiet / "a[/x]"
    (where / "out").mkdir(parents=True)
    (where / "answers.toml").write_text(ANSWERS)
    status = invoke(["lab", "check", "1", str(where / "answers.toml")])
    out, err = capsys.readouterr()
    assert status == 1 and "Traceback" not in err and err == "", err
    assert f"(results in {where / 'out'})" in out


def test_lab_check_with_markup_in_the_results_path(quiet, capsys):
    (quiet / "answers.toml").write_text(ANSWERS)
    results = quiet / "r[/y][bold]"
    results.mkdir(parents=True)
    status = invoke(["lab", "check", "1", str(quiet / "answers.toml"), "--results", str(results)])
    out, err = capsys.readouterr()
    assert status == 1 and err == "", err
    assert "r[/y][bold]" in out


def test_ps_with_markup_in_a_recorded_run(quiet, capsys):
    run = quiet / "runs" / "r[b]1"
    run.mkdir(parents=True)
    parent = os.getppid()
    (run / "state.json").write_text(json.dumps({
        "owner": [parent, processes.start_time(parent)], "pids": [], "bridges": [], "root_intfs": [],
        "nft_tables": [], "dirs": [], "about": {"family": "[/q]", "datapath": "[red]x[/red]"}}))
    status = invoke(["ps"])
    out, err = capsys.readouterr()
    assert status == 0 and err == "", err
    assert "r[b]1" in out and "[/q]" in out and "[red]x[/red]" in out


def test_servers_list_with_markup_in_a_name(quiet, capsys, monkeypatch):
    from testbed.emulation.cluster import servers
    monkeypatch.setattr(servers, "status", lambda: [
        {"name": "srv[/x]", "ip": "198.18.77.1", "pid": 7, "running": True, "ssh": False, "ovs": False}])
    status = invoke(["servers", "list"])
    out, err = capsys.readouterr()
    assert status == 0 and err == "", err
    assert "srv[/x]" in out


def test_styled_cells_keep_their_style_and_other_cells_are_literal():
    from rich.console import Console
    con = Console(width=80, record=True, color_system="truecolor", force_terminal=True)
    con.print(output.table("t[/a]", ["c[/b]", "d"], [(output.styled("reproduced"), "[green]no[/green]")]))
    text = con.export_text()
    assert "t[/a]" in text and "c[/b]" in text and "[green]no[/green]" in text
    assert "[green]reproduced" not in text and "reproduced" in text


@pytest.mark.parametrize("argv", [["topo", "show", "hpn"], ["list"]], ids=" ".join)
@pytest.mark.parametrize("columns", ["0", "1", "-5"])
def test_a_tiny_terminal_width_still_shows_the_output(argv, columns, quiet, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", columns)
    status = invoke(argv)
    out, err = capsys.readouterr()
    assert status == 0 and err == "", err
    assert len(out.splitlines()) >= 5
    assert max(len(line) for line in out.splitlines()) >= output.MIN_WIDTH - 1
