"""Namespace servers' files and the --servers options, without root: nothing is started."""
import pytest

from testbed.cli import main
from testbed.emulation.cluster import server_files

SERVERS = [{"name": "hpn-srv1", "ip": "198.18.77.1"}, {"name": "hpn-srv2", "ip": "198.18.77.2"}]


def test_sshd_takes_only_keys_on_the_underlay():
    conf = server_files.sshd_config("198.18.77.1", "/x/srv1", "/x/authorized_keys")
    for line in ("ListenAddress 198.18.77.1", "PermitRootLogin prohibit-password",
                 "PasswordAuthentication no", "KbdInteractiveAuthentication no",
                 "AuthorizedKeysFile /x/authorized_keys", "HostKey /x/srv1/host_ed25519_key"):
        assert line in conf.splitlines()
    # the server's own empty HOME: sshd's bash must not source this machine's ~/.bashrc
    assert "SetEnv HOME=/x/srv1/home" in conf.splitlines()


def test_ssh_client_checks_host_keys_and_names_every_server():
    conf = server_files.ssh_config(SERVERS, "/x/id", "/x/known_hosts", "/x/control")
    assert "Host hpn-srv2\n  HostName 198.18.77.2\n" in conf
    for line in ("StrictHostKeyChecking yes", "UserKnownHostsFile /x/known_hosts", "IdentitiesOnly yes",
                 "GlobalKnownHostsFile /dev/null", "BatchMode yes",
                 # only ever a client of the connection `servers up` keeps: never its own master
                 "ControlMaster no", "ControlPath /x/control/%C"):
        assert f"  {line}" in conf.splitlines()
    assert server_files.known_hosts_line(SERVERS[0], "ssh-ed25519 AAAA comment\n") == \
        "hpn-srv1,198.18.77.1 ssh-ed25519 AAAA\n"


def test_the_server_init_never_reaches_the_machines_ovs():
    script = server_files.init_script("hpn-srv1", "198.18.77.1", 24, "/x/srv1")
    assert "mount -t tmpfs -o mode=0755 hpn-server-ovs /run/openvswitch" in script
    assert script.index("/run/openvswitch\n") < script.index("ovsdb-server")   # private first
    assert "--remote=punix:/run/openvswitch/db.sock" in script and "hostname hpn-srv1" in script


def status(argv):
    try:
        return main(argv)
    except SystemExit as e:      # argparse's own one-line errors
        return e.code


@pytest.mark.parametrize("argv", [["up", "hpn", "--servers", "2"], ["up", "hpn", "--servers", "a,a"],
                                  ["up", "hpn", "--servers", "s1,s2,s3"],   # 2 pods: 2 units only
                                  ["servers", "up", "0"], ["servers", "up", "x"], ["servers"]])
def test_bad_server_arguments_exit_2_with_one_line(argv, capsys):
    assert status(argv) == 2
    assert capsys.readouterr().err.count("\n") == 1
