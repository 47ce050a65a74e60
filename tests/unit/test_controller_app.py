"""`up --controller-app`: bad input is one line, exit 2, nothing created (no run directory, no
bytecode beside the user's file), before any fabric; what a good app becomes (the launcher's app
list, the bridges' OpenFlow versions, the hosts' bare routing, our pipeline beside a user's)."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller.switch import SwitchWriter
from testbed.core.errors import ParamError
from testbed.emulation.control import apps as controller_app
from testbed.emulation.control.controller import ControllerProcess
from testbed.emulation.net import hostnet
from testbed.model import make_fabric
from testbed.model.contract import TABLE_FORWARD, TABLE_USER

ROOT = Path(__file__).resolve().parents[2]
TREE = str(ROOT / "examples" / "tree.toml")
NO_APP = "from os_ken.base import app_manager\n\nBase = app_manager.OSKenApp   # imported, not defined\n"
RAISES = "raise RuntimeError('no config here')\n"
SYNTAX = "def broken(:\n    pass\n"
LOUD = ("import atexit, sys\nfrom os_ken.base import app_manager\n\n"
        "class Loud(app_manager.OSKenApp):\n    pass\n\n"
        "print('{\"class\": \"Forged\"}')\n"
        "atexit.register(lambda: sys.stdout.write('x' * 5_000_000 + '\\n{\"versions\": 7}\\n'))\n")
FORKS = ("import os, sys, time\nfrom os_ken.base import app_manager\n\n"
         "class Forks(app_manager.OSKenApp):\n    pass\n\n"
         "child = os.fork()\n"
         "if child == 0:\n"
         "    time.sleep(600)\n    os._exit(0)\n"
         "open(os.environ['PIDFILE'] + '.tmp', 'w').write(str(child))   # the parent names it, whole\n"
         "os.rename(os.environ['PIDFILE'] + '.tmp', os.environ['PIDFILE'])\n")


def up(tmp_path, *args):
    """`hpn-testbed up file --set topology=tree.toml ARGS` as a real process, runs under tmp."""
    env = dict(os.environ, HPN_RUN_DIR=str(tmp_path / "runs"), PYTHONPATH=str(tmp_path))
    return subprocess.run([sys.executable, "-m", "testbed", "up", "file", "--set", f"topology={TREE}",
                           *args], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)


def app_file(tmp_path, name, text):
    (tmp_path / "apps").mkdir(exist_ok=True)
    path = tmp_path / "apps" / name
    path.write_text(text)
    return str(path)


BAD = {
    "missing file": (lambda t: ["--controller-app", str(t / "nosuch.py")], "no such file"),
    "not .py": (lambda t: ["--controller-app", app_file(t, "app.txt", "x = 1\n")], "not a .py file"),
    "a directory": (lambda t: ["--controller-app", str(t / "d.py")], "not a regular file"),
    "unknown module": (lambda t: ["--controller-app", "osken:no_such_pkg.app"], "no module named"),
    "not a module name": (lambda t: ["--controller-app", "osken:1bad-name"], "is not a module name"),
    "no OSKenApp subclass": (lambda t: ["--controller-app", app_file(t, "noapp.py", NO_APP)],
                             "defines no OSKenApp subclass"),
    "raises at import": (lambda t: ["--controller-app", app_file(t, "boom.py", RAISES)],
                         "importing it raised RuntimeError: no config here"),
    "empty": (lambda t: ["--controller-app", ""], "--controller-app: empty"),
    "blank": (lambda t: ["--controller-app", "  "], "--controller-app: empty"),
    "syntax error": (lambda t: ["--controller-app", app_file(t, "syntax.py", SYNTAX)],
                     "a syntax error at line 1"),
    "beside but OpenFlow 1.3 only": (lambda t: ["--controller-app", str(ROOT / "examples" / "l2_switch.py"),
                                                "--beside"], "must accept OpenFlow 1.5"),
    "beside alone": (lambda t: ["--beside"], "--beside: only with --controller-app"),
    "our options without ours": (lambda t: ["--controller-app", str(ROOT / "examples" / "l2_switch.py"),
                                            "--ecmp", "seeded"], "--ecmp need our controller"),
    "plaintext remote": (lambda t: ["--controller", "tcp:192.0.2.1:6653"], "needs mutual TLS"),
    "other remote": (lambda t: ["--controller", "ssl:192.0.2.1:6653"], "not supported yet"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_controller_app_is_one_line_exit_2_and_nothing_created(case, tmp_path):
    (tmp_path / "d.py").mkdir()
    argv, says = BAD[case]
    done = up(tmp_path, *argv(tmp_path), "--check")
    assert done.returncode == 2, done
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("hpn-testbed: "), done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    assert not list(tmp_path.rglob("__pycache__")), list(tmp_path.rglob("__pycache__"))


def test_a_good_app_is_described_by_its_class_and_versions():
    app = controller_app.checked(str(ROOT / "examples" / "controller_app.py"), beside=True)
    assert (app.cls, app.versions, app.beside) == ("PacketInCounter", (6,), True)
    alone = controller_app.checked(str(ROOT / "examples" / "l2_switch.py"))
    assert alone.cls == "LearningSwitch" and alone.bridge_protocols() == "OpenFlow13,OpenFlow15"
    assert controller_app.ControllerApp("m", "osken:m").bridge_protocols() == \
        "OpenFlow10,OpenFlow12,OpenFlow13,OpenFlow14,OpenFlow15"      # none declared: any


def test_what_an_app_prints_at_import_or_exit_never_mixes_with_the_checks_answer(tmp_path):
    app = controller_app.checked(app_file(tmp_path, "loud.py", LOUD))
    assert app.cls == "Loud" and app.versions == controller_app.OSKEN_VERSIONS


def test_a_process_an_app_forks_while_checked_does_not_outlive_the_check(tmp_path, monkeypatch):
    pidfile = tmp_path / "child.pid"
    monkeypatch.setenv("PIDFILE", str(pidfile))
    assert controller_app.checked(app_file(tmp_path, "forks.py", FORKS)).cls == "Forks"
    pid = int(pidfile.read_text())      # written by the importing parent before the check answered
    for _ in range(200):      # killed with the check's group; gone once init reaps it
        if not Path(f"/proc/{pid}").exists() or \
                Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"the app's child {pid} outlived the check")


def test_a_path_with_a_comma_is_refused(tmp_path):
    path = tmp_path / "a,b.py"
    path.write_text("x = 1\n")
    with pytest.raises(ParamError, match="comma"):
        controller_app.parse(str(path))


class FakeState:
    run_id = "r1"
    dir = Path("/nonexistent")

    def file(self, name):
        return self.dir / name


@pytest.mark.parametrize("app, apps, ours, protocols", [
    (None, "controller.app", True, "OpenFlow15"),
    (controller_app.ControllerApp("/x/a.py", "a.py", beside=True, versions=(6,)),
     "controller.app,/x/a.py", True, "OpenFlow15"),
    (controller_app.ControllerApp("m.n", "osken:m.n", versions=(4,)), "m.n", False,
     "OpenFlow13,OpenFlow15"),
])
def test_the_launcher_runs_ours_the_users_or_both(app, apps, ours, protocols):
    ctl = ControllerProcess(FakeState(), make_fabric("file", {"topology": TREE}), {}, app)
    assert (ctl.apps(), ctl.ours, ctl.protocols) == (apps, ours, protocols)
    assert ctl.env()["PYTHONDONTWRITEBYTECODE"] == "1"
    rows = [[ctl.target, True], [ctl.target, False], ["unix:/other", True]]
    assert ctl.switches_connected(rows) == 1 and ctl.switches_connected(None) == 0


def test_a_bare_fabric_has_no_gateway():
    host = next(iter(make_fabric("file", {"topology": TREE}).hosts.values()))
    bare = hostnet.host_script(host, "bonding", "system", bare=True)
    assert hostnet.GATEWAY_IP not in bare and f"\nroute add default src {host.nics[0].ip} dev" in bare
    assert hostnet.GATEWAY_IP in hostnet.host_script(host, "bonding", "system")


def test_beside_a_users_app_ours_wipes_only_its_tables_and_misses_to_the_users():
    from os_ken.ofproto import ofproto_v1_5, ofproto_v1_5_parser

    class FakeDatapath:
        ofproto, ofproto_parser, id = ofproto_v1_5, ofproto_v1_5_parser, 1

        def __init__(self):
            self.sent = []

        def send_msg(self, msg):
            msg.set_xid(len(self.sent) + 1)
            msg.serialize()
            self.sent.append(msg)
    sw = next(iter(make_fabric("file", {"topology": TREE}).switches.values()))
    alone, beside = SwitchWriter(FakeDatapath(), sw, "seeded"), SwitchWriter(FakeDatapath(), sw, "seeded")
    alone.reset()
    beside.reset(beside=True)
    wiped = [m.table_id for m in beside.dp.sent
             if getattr(m, "command", None) == ofproto_v1_5.OFPFC_DELETE and hasattr(m, "table_id")]
    assert wiped == [0, 1]
    misses = [m for m in beside.dp.sent if getattr(m, "table_id", None) == TABLE_FORWARD
              and getattr(m, "command", None) == ofproto_v1_5.OFPFC_ADD]
    assert [m.instructions[-1].table_id for m in misses] == [TABLE_USER]
    assert len(beside.dp.sent) == len(alone.dp.sent) + 2      # one more wipe, the miss rule
