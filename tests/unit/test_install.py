"""The install leaves nothing running: `make setup` installs only what the default paths need,
the multi-server mode's packages come with the first `servers up`, and the distro lane that
checks it all on fresh Debian roots is wired up (tests/distro/run runs it; not in `make test`)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from testbed.core.errors import ParamError
from testbed.emulation.cluster import servers

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "scripts" / "install.sh"
SERVER_PKGS = {"openssh-server", "openssh-client", "sudo"}


def packages(which: str) -> set[str]:
    out = subprocess.run(["bash", str(INSTALL), "--packages", which], capture_output=True, text=True,
                         check=True, timeout=30).stdout
    return set(out.split())


def test_the_default_install_has_no_sshd_and_no_sudo():
    default, extra = packages("default"), packages("servers")
    assert {"mininet", "openvswitch-switch", "iperf3"} <= default
    assert not default & SERVER_PKGS, "openssh-server starts a system sshd: not for `make setup`"
    assert extra == SERVER_PKGS
    assert packages("test") == {"chromium"} and not packages("test") & (default | extra)
    assert packages("all") == default | extra | packages("test")


def test_servers_up_installs_its_packages_through_install_sh(monkeypatch):
    calls = []
    missing = [["sshd", "sudo"], []]      # before, after the install

    def run(argv, **kw):
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")
    monkeypatch.setattr(servers, "_missing_tools", lambda: missing[min(len(calls), 1)])
    monkeypatch.setattr(servers.subprocess, "run", run)
    servers._install_tools()
    assert calls == [["bash", str(INSTALL), "--servers"]]


def test_a_failed_install_is_one_line_naming_the_command(monkeypatch):
    monkeypatch.setattr(servers, "_missing_tools", lambda: ["sshd"])
    monkeypatch.setattr(servers.subprocess, "run", lambda argv, **kw: subprocess.CompletedProcess(
        argv, 1, "",
        "install: apt-get update failed\ninstall: error: apt-get install openssh-server failed\n"))
    with pytest.raises(ParamError) as err:
        servers._install_tools()
    msg = str(err.value)
    assert "\n" not in msg and "install.sh --servers" in msg
    assert "apt-get install openssh-server failed" in msg


def test_install_sh_starts_no_service_while_installing_the_servers_packages():
    text = INSTALL.read_text()
    start = text.index("  --servers)")
    servers_branch = text[start:text.index("\n  *) die", start)]
    assert "policy-rc.d" in servers_branch and "exit 101" in servers_branch
    assert "systemctl disable ssh.service" in servers_branch


def test_the_distro_lane_is_wired_up_but_not_in_make_test():
    for script in ("run", "enter", "inside"):
        subprocess.run(["bash", "-n", str(ROOT / "tests" / "distro" / script)], check=True, timeout=30)
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^test-distro:\n\ttests/distro/run \$\(DISTRO\)", makefile, re.MULTILINE)
    test_target = re.search(r"^test: (.*)$", makefile, re.MULTILINE).group(1)
    assert "distro" not in test_target
    assert "make test-distro" in makefile.split("\n\n")[0]          # documented in the header
    enter = (ROOT / "tests" / "distro" / "enter").read_text()
    assert "pivot_root" in enter        # Mininet's host shells escape a plain chroot


def test_the_distro_lane_refuses_bad_arguments_in_one_line_and_documents_them():
    """Bad arguments: one line (or the usage) and exit 2, before anything is built; --help lists
    every option, --pytest (more pytest arguments for the tests step, e.g. -k to rerun) too."""
    run = str(ROOT / "tests" / "distro" / "run")
    for bad in (["trixie", "--pytest"], ["trixie", "--pytest", ""]):
        proc = subprocess.run(["bash", run, *bad], capture_output=True, text=True, timeout=30, check=False)
        assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
    usage = subprocess.run(["bash", run, "--help"], capture_output=True, text=True, timeout=30,
                           check=True).stdout
    for option in ("--full", "--fresh", "--prepare", "--pytest ARGS", "Ctrl-C"):
        assert option in usage, option
    assert usage.rstrip().endswith("exit 130/143/129.")             # the comment, and only it


def test_the_daemons_install_sh_starts_do_not_hold_the_callers_flock(tmp_path):
    """`flock LOCK make test` starts Open vSwitch through install.sh: a daemon that inherited the
    lock's fd held the lock for as long as OVS ran (every later `flock LOCK` waited for ever)."""
    body = re.search(r"^detached\(\) \{.*?^\}", INSTALL.read_text(), re.S | re.M).group(0)
    lock, gone = tmp_path / "lock", tmp_path / "daemon.pid"
    daemon = f"setsid sleep 30 </dev/null >/dev/null 2>&1 & echo \\$! > {gone}"
    subprocess.run(["flock", str(lock), "bash", "-c", f'{body}\ndetached bash -c "{daemon}"'],
                   check=True, timeout=30)
    pid = int(gone.read_text())
    try:
        free = subprocess.run(["flock", "-n", str(lock), "true"], timeout=30).returncode == 0
        assert free, "the daemon kept the caller's lock"
    finally:
        subprocess.run(["kill", str(pid)], check=False)
