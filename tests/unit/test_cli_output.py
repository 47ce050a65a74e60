"""The command line's output contract (testbed/cli/output.py): every `--json` is one envelope
(numbers as numbers, booleans as booleans, errors as JSON too), a reader that goes away (`| head
-c 10`) ends any subcommand without a traceback, and meaningless combinations are refused."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.cli import main
from testbed.core import interrupts

ROOT = Path(__file__).resolve().parents[2]
LAB1 = ROOT / "labs" / "01-fabrics-and-budgets" / "answers.toml"

# every subcommand that has --json; those that need a running fabric or root answer with their
# error envelope here (a bad parameter, no fabric), which must survive the pipe as well
JSON_COMMANDS = [
    ["doctor", "--json"], ["topo", "budget", "hpn", "--json"], ["topo", "show", "hpn", "--json"],
    ["topo", "show", "hpn", "--preset", "segment", "--json"], ["list", "--json"],
    ["list", "--params", "--json"], ["lab", "list", "--json"],
    ["lab", "check", "1", str(LAB1), "--results", "{tmp}", "--json"], ["ps", "--json"],
    ["servers", "list", "--json"], ["up", "hpn", "--set", "nosuch=1", "--json"],
    ["run", "nosuch", "--json"], ["trace", "--fabric", "nosuch", "a", "b", "--json"],
    ["servers", "up", "0", "--json"],
    ["run", str(ROOT / "experiments" / "nic0-link-down.toml"), "--check", "--json"],
]


@pytest.mark.parametrize("argv", JSON_COMMANDS, ids=" ".join)
def test_json_output_through_head_has_no_traceback(argv, tmp_path):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    cmd = " ".join(f"'{a}'" for a in [sys.executable, "-m", "testbed", *argv])
    proc = subprocess.run(["bash", "-c", f"set -o pipefail; HPN_RUN_DIR={tmp_path}/runs {cmd} | head -c 10"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.stdout == '{\n  "hpn_t'


@pytest.mark.parametrize("argv", JSON_COMMANDS, ids=" ".join)
def test_one_envelope(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(interrupts, "install", lambda: None)
    monkeypatch.setenv("HPN_RUN_DIR", str(tmp_path / "runs"))
    from testbed.emulation.net import system
    from testbed.emulation.run import runstate
    monkeypatch.setattr(runstate, "ROOT", tmp_path / "runs")
    monkeypatch.setattr(system, "ovs_running", lambda: True)   # no `ovs-vsctl show` (conftest)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    try:
        status = main(argv)
    except SystemExit as e:
        status = e.code
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) >= {"hpn_testbed", "command", "ok"}
    words = 2 if argv[0] in ("topo", "lab", "servers") else 1
    assert doc["command"] == " ".join(argv[:words])
    if doc["ok"]:
        assert "result" in doc and "error" not in doc
    else:
        assert isinstance(doc["error"], str) and doc["exit_status"] == status != 0


def test_numbers_and_booleans_are_typed(capsys):
    assert main(["list", "--params", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["result"]
    assert all(isinstance(s["tour"], bool) for s in listed)
    knobs = [k for s in listed for k in s["params"]["knobs"]]
    assert any(isinstance(k["default"], (int, float)) and not isinstance(k["default"], bool)
               for k in knobs)


def test_version_from_the_package_metadata(capsys):
    from importlib import metadata
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"hpn-testbed {metadata.version('hpn-testbed')}"


def test_topo_show_is_rounded_and_fits_80_columns():
    proc = subprocess.run([sys.executable, "-m", "testbed", "topo", "show", "hpn", "--set",
                           "core_oversubscription=7"], capture_output=True, text=True, timeout=60,
                          env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"}, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "914.286" in proc.stdout and "914.2857" not in proc.stdout and "…" not in proc.stdout
    assert max(len(line) for line in proc.stdout.splitlines()) <= 80


def test_clean_all_says_it_ends_live_runs(capsys):
    with pytest.raises(SystemExit):
        main(["clean", "--help"])
    assert "live runs" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("ext,magic", [("svg", b"<?xml"), ("pdf", b"%PDF"), ("png", b"\x89PNG")])
def test_picture_format_follows_the_extension(ext, magic, tmp_path, capsys):
    path = tmp_path / f"hpn.{ext}"
    assert main(["topo", "show", "hpn", "--png", str(path)]) == 0
    assert path.read_bytes().startswith(magic)


def test_a_run_without_a_figure_removes_the_old_one(tmp_path, monkeypatch):
    import scenarios
    scenario = scenarios.get("link-flap")
    scenario.configure({}, True)
    old = tmp_path / "link-flap.png"
    old.write_bytes(b"an earlier run's figure, titled reproduced")
    monkeypatch.setattr(type(scenario), "run", lambda self, quick: {})
    monkeypatch.setattr(type(scenario), "report", lambda self, figures: scenario.lost("switch gone"))
    result = scenario.execute(tmp_path)
    assert "png" not in result.files and not old.exists()


def test_a_saved_envelope_counts_as_its_result_for_the_labs(tmp_path, capsys):
    from testbed.labs import results
    assert main(["topo", "budget", "hpn", "--preset", "paper", "--json"]) == 0
    (tmp_path / "budget-hpn.json").write_text(capsys.readouterr().out)
    indexed = results.index(tmp_path)["budget-hpn"]
    assert "hpn_testbed" not in indexed and indexed
