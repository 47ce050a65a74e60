"""--custom FILE.py and `custom = "file.py"`: a plug-in's families are taken by topo, up, run and
experiment files; a plug-in that is missing, raises, or registers something malformed gets one
line naming the file, exit status 2, and nothing is created (it fails before the parser)."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.cli import main
from testbed.core import plugins
from testbed.core.errors import ParamError
from testbed.model import families

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "custom_family.py"


@pytest.fixture
def registry():
    """Whatever a test's plug-ins register is gone after it."""
    before = dict(families.FAMILIES)
    yield
    families.FAMILIES.clear()
    families.FAMILIES.update(before)
    plugins._loaded.clear()
    plugins._digests.clear()


def test_topo_show_takes_a_plugin_family(registry, capsys):
    assert main(["topo", "show", "dualroot", "--custom", str(EXAMPLE), "--preset", "wide",
                 "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["result"]
    assert shown["family"] == "dualroot" and shown["hosts"] == 6
    assert shown["equal_cost_paths"]["paths"] == 2
    assert families.get("dualroot").origin == str(EXAMPLE), "the controller can load it again"


def test_an_experiment_file_loads_its_plugin_relative_to_itself(registry, tmp_path, capsys):
    shutil.copy(EXAMPLE, tmp_path / "mine.py")
    (tmp_path / "exp.toml").write_text(
        'custom = "mine.py"\n[fabric]\nfamily = "dualroot"\nleaves = 2\n'
        '[[traffic]]\nkind = "iperf3"\nfrom = "l0h0"\nto = "l1h1"\nseconds = 2\n')
    assert main(["run", str(tmp_path / "exp.toml"), "--check"]) == 0
    assert "exp" in capsys.readouterr().out


def test_a_bad_plugin_in_an_experiment_file_is_one_line(registry, tmp_path, capsys):
    (tmp_path / "bad.py").write_text("raise RuntimeError('no')\n")
    (tmp_path / "exp.toml").write_text('custom = "bad.py"\n[fabric]\nfamily = "hpn"\n'
                                       '[[traffic]]\nkind = "iperf3"\nfrom = "a"\nto = "b"\n')
    assert main(["run", str(tmp_path / "exp.toml"), "--check"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"hpn-testbed: {tmp_path / 'exp.toml'}: top level: custom: bad.py:1: RuntimeError: no"


BAD = {   # file text -> what its one line says after "hpn-testbed: --custom FILE"
    "raise ValueError('broken on purpose')\n": ":1: ValueError: broken on purpose",
    "def (:\n": ":1: invalid syntax",
    "import no_such_module_here\n": ":1: ModuleNotFoundError: No module named 'no_such_module_here'",
    "from testbed.model.families import HPN, register\nregister(HPN)\n":
        ": register: a family named 'hpn' is already registered",
    ("import dataclasses\nfrom testbed.model.families import HPN, register\n"
     "register(dataclasses.replace(HPN, name='Bad Name'))\n"):
        ": register: family name 'Bad Name' must be a lower-case identifier",
    "from testbed.model.families import register\nregister({'name': 'x'})\n":
        ": register: expected a Family, got dict",
}


@pytest.mark.parametrize("text, problem", BAD.items(), ids=range(len(BAD)))
def test_a_bad_plugin_is_one_line_exit_2_nothing_created(tmp_path, text, problem):
    plugin = tmp_path / "plugin.py"
    plugin.write_text(text)
    done = subprocess.run([sys.executable, "-m", "testbed", "up", "hpn", "--check", "--custom",
                           str(plugin)], check=False, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [f"hpn-testbed: --custom {plugin}{problem}"]


@pytest.mark.parametrize("path, problem", [("nosuch.py", "no such plug-in file"),
                                           ("README.md", "a plug-in is a Python file (.py)")])
def test_a_missing_or_non_python_plugin_is_one_line(path, problem, capsys):
    assert main(["topo", "show", "hpn", f"--custom={path}"]) == 2
    assert capsys.readouterr().err.splitlines() == [f"hpn-testbed: --custom {path}: {problem}"]


# ---- trusted as ssh trusts a key file, read once, loaded again only as checked (issue 39, 9) ----

MARK = "open({mark!r}, 'w').write('ran')\n"      # a plug-in's first line: proof that it ran


def marking(path: Path, mark: Path, body: str = "") -> Path:
    path.write_text(MARK.format(mark=str(mark)) + body)
    path.chmod(0o644)
    return path


def cli(*argv, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "testbed", *argv], check=False, capture_output=True,
                          text=True, cwd=cwd, timeout=60)


def untrusted(tmp_path: Path, how: str) -> Path:
    """A plug-in that must not run, made untrusted one way."""
    here = tmp_path / "d"
    here.mkdir(mode=0o755)
    plugin = marking(here / "p.py", tmp_path / "ran")
    if how == "world-writable file":
        plugin.chmod(0o646)
    elif how == "group-writable file":
        plugin.chmod(0o664)
    elif how == "another user's file":
        os.chown(plugin, 65534, 65534)
    elif how == "world-writable directory":
        here.chmod(0o777)
    elif how == "another user's directory":
        os.chown(here, 65534, 65534)
    elif how == "group-writable directory above":
        tmp_path.chmod(0o775)
    return plugin


HOW = ["world-writable file", "group-writable file", "another user's file",
       "world-writable directory", "another user's directory", "group-writable directory above"]


@pytest.mark.parametrize("how", HOW)
def test_an_untrusted_plugin_is_refused_unrun(tmp_path, how):
    plugin = untrusted(tmp_path, how)
    done = cli("up", "hpn", "--check", "--custom", str(plugin))
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert line.startswith(f"hpn-testbed: --custom {plugin}: ") and line.endswith("; not run")
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("how", HOW[:4])
def test_an_experiment_files_untrusted_plugin_is_refused_unrun_even_under_check(tmp_path, how):
    untrusted(tmp_path, how)
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "e.toml").write_text(
        'custom = "../d/p.py"\n[fabric]\nfamily = "hpn"\n'
        '[[traffic]]\nkind = "iperf3"\nfrom = "a"\nto = "b"\n')
    done = cli("run", str(tmp_path / "exp" / "e.toml"), "--check")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.count("\n") == 1 and "custom: ../d/p.py: " in done.stderr, done.stderr
    assert not (tmp_path / "ran").exists()


def test_a_sticky_world_writable_directory_is_trusted(tmp_path):
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared").chmod(0o1777)
    marking(tmp_path / "shared" / "p.py", tmp_path / "ran")
    assert cli("topo", "show", "hpn", "--custom", str(tmp_path / "shared" / "p.py")).returncode == 0
    assert (tmp_path / "ran").exists()


def test_a_link_is_judged_by_what_it_names(tmp_path):
    plugin = untrusted(tmp_path, "world-writable directory")
    (tmp_path / "link.py").symlink_to(plugin)
    done = cli("topo", "show", "hpn", "--custom", str(tmp_path / "link.py"))
    assert done.returncode == 2 and "may be written by other users" in done.stderr
    assert not (tmp_path / "ran").exists()


def test_a_plugin_over_1_mb_is_refused_unrun(tmp_path):
    plugin = marking(tmp_path / "big.py", tmp_path / "ran", "#" * plugins.PLUGIN_MAX)
    done = cli("topo", "show", "hpn", "--custom", str(plugin))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [f"hpn-testbed: --custom {plugin}: {plugin.stat().st_size:,} "
                                        f"bytes, more than the {plugins.PLUGIN_MAX:,} allowed"]
    assert not (tmp_path / "ran").exists()


def test_a_command_without_custom_refuses_it_before_running_the_plugin(tmp_path):
    plugin = marking(tmp_path / "p.py", tmp_path / "ran")
    done = cli("ps", "--custom", str(plugin))
    assert (done.returncode, done.stdout) == (2, "")
    assert "unrecognized arguments: --custom" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("text, problem", [
    ("raise SystemExit(0)\n", ":1: SystemExit: 0"),
    ("import sys\nsys.exit()\n", ":2: SystemExit"),
    ("raise KeyboardInterrupt\n", ":1: KeyboardInterrupt"),
    ("raise BaseException('base')\n", ":1: BaseException: base"),
    ("import os\nos.kill(os.getpid(), 2)\n", ":2: KeyboardInterrupt"),
    ("x = 1\0\n", ": ValueError: source code string cannot contain null bytes"),
])
def test_exits_and_interrupts_in_a_plugin_are_one_line_exit_2(tmp_path, text, problem):
    (tmp_path / "p.py").write_text(text)
    done = cli("up", "hpn", "--check", "--custom", str(tmp_path / "p.py"))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [f"hpn-testbed: --custom {tmp_path / 'p.py'}{problem}"]


def test_what_a_plugin_prints_goes_to_stderr_not_before_the_json(tmp_path):
    (tmp_path / "p.py").write_text("print('hello from the plug-in')\n")
    done = cli("topo", "show", "hpn", "--custom", str(tmp_path / "p.py"), "--json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["result"]["family"] == "hpn"
    assert "hello from the plug-in" in done.stderr


def test_the_spec_names_the_digest_and_a_changed_family_file_is_refused(registry, tmp_path):
    plugin = tmp_path / "mine.py"
    shutil.copy(EXAMPLE, plugin)
    plugin.chmod(0o644)
    fabric = families.make_fabric(families.load(plugin)[0].name, {})
    spec = families.spec_of(fabric)
    assert spec["family_sha256"] == hashlib.sha256(plugin.read_bytes()).hexdigest()
    assert families.from_spec(spec).family == fabric.family       # unchanged: the same module
    marking(plugin, tmp_path / "ran", EXAMPLE.read_text())         # swapped after the check
    code = ("import json, sys\nfrom testbed.model import families\n"
            "families.from_spec(json.loads(sys.argv[1]))\n")     # the controller, trace, capture
    done = subprocess.run([sys.executable, "-c", code, json.dumps(spec)], check=False, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert f"{plugin}: changed since it was checked (its sha256 differs); not run" in done.stderr
    assert not (tmp_path / "ran").exists()
    with pytest.raises(ParamError, match="changed since it was checked"):   # and in this process
        families.from_spec({**spec, "family_sha256": "0" * 64})


def test_a_policy_file_is_loaded_by_the_controller_only_as_checked(tmp_path):
    from testbed.model import policies
    plugin = tmp_path / "pol.py"
    shutil.copy(ROOT / "examples" / "custom_policy.py", plugin)
    plugin.chmod(0o644)
    digest = plugins.fingerprint(plugin)
    code = ("import sys\nfrom testbed.model import policies\n"
            "print(policies.load_file(sys.argv[1], sys.argv[2]))\n")
    run = [sys.executable, "-c", code, str(plugin)]
    assert subprocess.run([*run, digest], check=True, cwd=ROOT, capture_output=True, text=True,
                          timeout=60).stdout.strip().startswith("[")
    done = subprocess.run([*run, "0" * 64], check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode != 0 and "changed since it was checked" in done.stderr
    assert policies.source("no-such-policy") is None


@pytest.mark.parametrize("how", HOW)
def test_an_untrusted_controller_app_is_refused_before_it_is_imported(tmp_path, how):
    plugin = untrusted(tmp_path, how)
    done = cli("up", "hpn", "--check", "--controller-app", str(plugin))
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert line.startswith(f"hpn-testbed: --controller-app {plugin}: ") and line.endswith("; not run")
    assert not (tmp_path / "ran").exists()


def test_the_launcher_runs_a_users_app_file_only_as_checked(tmp_path, monkeypatch):
    from controller import launcher
    from testbed.emulation.control import apps
    app = apps.parse(str(ROOT / "examples" / "l2_switch.py"))
    assert app.sha256 == hashlib.sha256((ROOT / "examples" / "l2_switch.py").read_bytes()).hexdigest()
    spec = tmp_path / "spec.json"
    monkeypatch.setenv("HPN_TESTBED_SPEC", str(spec))
    spec.write_text(json.dumps({"controller_app": {"file": app.target, "sha256": app.sha256}}))
    launcher.check_app_file()                  # as checked: it runs
    spec.write_text(json.dumps({"controller_app": {"file": app.target, "sha256": "0" * 64}}))
    with pytest.raises(SystemExit, match="changed since it was checked"):
        launcher.check_app_file()


@pytest.mark.parametrize("argv", [["trace", "l0h0", "l1h0"], ["capture", "l0h0-n0p0"]])
def test_trace_and_capture_refuse_a_family_file_changed_since_up(registry, tmp_path, monkeypatch,
                                                                 capsys, argv):
    from testbed.emulation.run import runstate

    from .conftest import fake_run
    monkeypatch.setattr(runstate, "ROOT", tmp_path / "runs")
    fake_run(tmp_path / "runs")
    plugin = tmp_path / "mine.py"
    shutil.copy(EXAMPLE, plugin)
    checked = hashlib.sha256(plugin.read_bytes()).hexdigest()          # what `up` ran
    marking(plugin, tmp_path / "ran", EXAMPLE.read_text())             # swapped since
    (tmp_path / "runs" / "fake" / "spec.json").write_text(json.dumps(
        {"family": "dualroot", "params": {}, "family_file": str(plugin), "family_sha256": checked}))
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"hpn-testbed: {plugin}: changed since it was checked (its sha256 differs); not run"]
    assert not (tmp_path / "ran").exists()


def test_what_a_plugins_family_prints_later_goes_to_stderr_under_json(tmp_path):
    text = EXAMPLE.read_text().replace("def build(p: DualRootParams) -> Fabric:\n",
                                       "def build(p: DualRootParams) -> Fabric:\n"
                                       "    print('built by the plug-in')\n", 1)
    assert "built by the plug-in" in text
    (tmp_path / "p.py").write_text(text)
    done = cli("topo", "show", "dualroot", "--custom", str(tmp_path / "p.py"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["family"] == "dualroot"
    assert "built by the plug-in" in done.stderr


@pytest.mark.parametrize("raises, says", [("raise SystemExit(0)", "SystemExit: 0"),
                                          ("raise KeyboardInterrupt", "KeyboardInterrupt"),
                                          ("raise BaseException('b')", "BaseException: b"),
                                          ("raise ValueError('v')", "ValueError: v")])
def test_what_a_plugins_family_raises_later_is_one_line_exit_2(tmp_path, raises, says):
    head = "def build(p: DualRootParams) -> Fabric:\n"
    (tmp_path / "p.py").write_text(EXAMPLE.read_text().replace(head, f"{head}    {raises}\n", 1))
    line = EXAMPLE.read_text().splitlines().index(head.strip()) + 2
    done = cli("topo", "show", "dualroot", "--custom", str(tmp_path / "p.py"), "--json")
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"hpn-testbed: {tmp_path / 'p.py'}:{line}: {says}"]
    assert json.loads(done.stdout)["ok"] is False
