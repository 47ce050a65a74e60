"""The files of a namespace server (testbed/emulation/cluster/servers.py): its init script, sshd and ssh
configuration and /etc/hosts. Pure text, so they can be read and tested without root."""
from __future__ import annotations

OVS_SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
UNDERLAY_MTU = 9000     # room for VXLAN's 50 bytes around a 1500-byte fabric frame, and more


def init_script(name: str, ip: str, prefix: int, sdir: str) -> str:
    """PID 1 of a server: run inside fresh network, mount, PID and UTS namespaces. It mounts a
    private OVS run directory over the machine's (which it so never sees), its own /sys (this
    network namespace's interfaces) and /etc/hosts, waits for its underlay interface, starts its
    own ovsdb-server and ovs-vswitchd (userspace datapath: no kernel module needed) and sshd, and
    waits on sshd. Everything it starts dies with it: it is PID 1 of the namespace."""
    return f"""set -e
hostname {name}
mount -t sysfs sysfs /sys
mount -t tmpfs -o mode=0755 hpn-server-ovs /run/openvswitch
mount -t tmpfs -o mode=0755 hpn-server-sshd /run/sshd
mount --bind {sdir}/hosts /etc/hosts
ip link set lo up
until [ -e /sys/class/net/u0 ]; do sleep 0.02; done   # moved in by `servers up`
ip addr add {ip}/{prefix} dev u0
ip link set u0 mtu {UNDERLAY_MTU} up
ovsdb-tool create {sdir}/conf.db {OVS_SCHEMA}
ovsdb-server {sdir}/conf.db --remote=punix:/run/openvswitch/db.sock \\
    --pidfile=/run/openvswitch/ovsdb-server.pid --unixctl=/run/openvswitch/ovsdb-server.ctl \\
    --log-file={sdir}/ovsdb-server.log --detach --no-chdir
ovs-vsctl --no-wait init
ovs-vswitchd unix:/run/openvswitch/db.sock --pidfile=/run/openvswitch/ovs-vswitchd.pid \\
    --log-file={sdir}/ovs-vswitchd.log --detach --no-chdir
/usr/sbin/sshd -D -f {sdir}/sshd_config -E {sdir}/sshd.log &
wait $!
"""


def sshd_config(ip: str, sdir: str, authorized_keys: str) -> str:
    """Key-only root login on the underlay address, nothing else (no passwords, no forwarding);
    MaxStartups/MaxSessions high: Mininet Cluster Edition opens an ssh session per node. HOME is
    the server's own empty one: sshd's bash would source this machine's ~/.bashrc (pyenv, conda...)
    before every command, which made the commands of a run cost more CPU than its traffic."""
    return f"""ListenAddress {ip}
SetEnv HOME={sdir}/home
Port 22
HostKey {sdir}/host_ed25519_key
PidFile {sdir}/sshd.pid
AuthorizedKeysFile {authorized_keys}
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
StrictModes yes
MaxStartups 500
MaxSessions 500
X11Forwarding no
AllowAgentForwarding no
AllowTcpForwarding no
AllowStreamLocalForwarding no
PermitTunnel no
PrintMotd no
"""


def ssh_config(servers: list[dict], key: str, known_hosts: str, control_dir: str) -> str:
    """The client side, only for our servers: our key, our known hosts (strictly checked),
    one shared connection per server, which `servers up` starts (Mininet Cluster Edition runs a
    fresh ssh per command); without it ssh connects on its own."""
    names = " ".join(s["name"] for s in servers) + " " + " ".join(s["ip"] for s in servers)
    each = "".join(f"Host {s['name']}\n  HostName {s['ip']}\n" for s in servers)
    return each + f"""Host {names}
  User root
  IdentityFile {key}
  IdentitiesOnly yes
  UserKnownHostsFile {known_hosts}
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  PasswordAuthentication no
  ControlMaster no
  ControlPath {control_dir}/%C
"""


def hosts_file(servers: list[dict], controller_ip: str) -> str:
    """/etc/hosts inside every server: itself and the others by name (sudo looks its own up)."""
    lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost ip6-loopback",
             f"{controller_ip} hpn-controller"]
    return "\n".join(lines + [f"{s['ip']} {s['name']}" for s in servers]) + "\n"


def known_hosts_line(server: dict, host_pubkey: str) -> str:
    return f"{server['name']},{server['ip']} {' '.join(host_pubkey.split()[:2])}\n"
