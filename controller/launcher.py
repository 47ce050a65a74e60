"""Run an os-ken app in-process (os-ken 4.x ships no osken-manager).

    python -m controller.launcher APP[,APP...] SOCKET [extra os-ken args]
    python -m controller.launcher APP ssl:HOST:PORT --ctl-privkey K --ctl-cert C --ca-certs CA

Serves OpenFlow on the Unix socket SOCKET, not on TCP: only processes that may enter its
directory (the testbed makes it root-only) can reach the controller, so a local user cannot
pose as a switch. Open vSwitch connects to it as `unix:SOCKET` (it accepts such targets only
under its own run directory). The peer of every connection must be ovs-vswitchd itself, run
by root: so a connection that claims a switch's DPID is that switch (reconnecting).
With ssl:HOST:PORT (a fabric across servers, testbed/emulation/cluster/site.py) it serves TCP with
mutual TLS instead: only a switch whose certificate the run's CA signed can connect.

Several apps (comma-separated: ours and a user's, testbed/emulation/control/apps.py) run in
the one process, as os-ken runs them. The heartbeat the testbed's watchdog reads is stamped here
(controller/heartbeat.py, its file named by the run's spec), whichever apps run.

SIGTERM/SIGINT end the process at once with status 0: os-ken's default "native" hub runs apps
in non-daemon threads that it cannot kill, so a normal shutdown (AppManager.close) would hang.
"""
import json
import logging
import os
import signal
import socket
import struct
import sys

# isort: off
from os_ken import cfg
from os_ken import log as osken_log
# app_manager first: importing os_ken.controller.controller first hits a
# circular import inside os-ken.
from os_ken.base.app_manager import AppManager
import os_ken.controller.controller as osken_controller  # noqa: E402  registers --ofp-* opts
# isort: on
from os_ken.lib import hub

from controller import heartbeat, ovs_groups
from testbed.core import plugins
from testbed.core.errors import ParamError

LOG = logging.getLogger(__name__)


class UnixConnection:
    """An accepted Unix-socket connection that os-ken's Datapath can use like a TCP one
    (it sets TCP_NODELAY, which a Unix socket does not have)."""

    def __init__(self, sock):
        self._sock = sock

    def setsockopt(self, level, option, value):
        if level != socket.IPPROTO_TCP:
            self._sock.setsockopt(level, option, value)

    def __getattr__(self, name):
        return getattr(self._sock, name)


def peer(sock) -> tuple[int, int, str]:
    """(pid, uid, command name) of the process at the other end of a Unix socket."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    try:
        with open(f"/proc/{pid}/comm") as f:
            comm = f.read().strip()
    except OSError:
        comm = "?"
    return pid, uid, comm


def serve_unix(path):
    """Accept OpenFlow connections on `path` (replaces os-ken's TCP server loop)."""
    if os.path.exists(path):
        os.unlink(path)
    old = os.umask(0o077)
    try:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
    finally:
        os.umask(old)
    server.listen(128)
    while True:
        sock, _ = server.accept()
        pid, uid, comm = peer(sock)
        if uid != 0 or comm != "ovs-vswitchd":
            LOG.warning("refusing an OpenFlow connection from pid %d (uid %d, %s)", pid, uid, comm)
            sock.close()
            continue
        hub.spawn(osken_controller.datapath_connection_factory, UnixConnection(sock), path)


def _exit_now(signum, _frame):
    LOG.info('signal %d: exiting', signum)
    logging.shutdown()
    os._exit(0)


def start_heartbeat(apps) -> None:
    """Beat `apps` into the heartbeat file the run's spec names (HPN_TESTBED_SPEC), if it names one."""
    spec = os.environ.get("HPN_TESTBED_SPEC")
    if spec:
        with open(spec) as f:
            data = json.load(f)
        heartbeat.start(data.get("heartbeat"), data.get("heartbeat_s", 0.1), apps)


def run_apps(app_lists) -> None:
    """os-ken's AppManager.run_apps, with the heartbeat beating the apps once they exist."""
    manager = AppManager.get_instance()
    manager.load_apps(app_lists)
    services = manager.instantiate_apps(**manager.create_contexts())
    start_heartbeat(list(manager.applications.values()))
    hub.joinall(services)


def check_app_file() -> None:
    """A user's app file runs only as `up` checked it: the sha256 the run's spec gives
    (testbed/emulation/control/apps.py), else the launcher exits with one line."""
    spec = os.environ.get("HPN_TESTBED_SPEC")
    if not spec:
        return
    with open(spec) as f:
        app = json.load(f).get("controller_app") or {}
    if app.get("file"):
        try:
            plugins.read(app["file"], app.get("sha256") or "")
        except ParamError as e:
            sys.exit(f"controller app {e}")


def run(app_module, path, extra_args=()):
    """Serve OpenFlow on the Unix socket `path` with `app_module` (a module name or a path to
    a .py file, or several, comma-separated); `extra_args` are more os-ken options, e.g.
    ['--verbose']. Applies ovs_groups.apply_parser_fixes(). Blocks until SIGTERM/SIGINT, which
    exit the process. Call from the main thread."""
    tls = str(path).startswith('ssl:')
    if tls:   # switches on other servers: TCP with mutual TLS (os-ken's own SSL server)
        for option in ('--ctl-privkey', '--ctl-cert', '--ca-certs'):
            if option not in extra_args:
                sys.exit(f'{path}: needs {option} (both sides must present certificates)')
        host, port = str(path)[4:].rsplit(':', 1)
        cfg.CONF(args=['--ofp-ssl-listen-port', port, '--ofp-listen-host', host, *extra_args],
                 project='os_ken')
    else:
        cfg.CONF(args=['--ofp-tcp-listen-port', '1', *extra_args], project='os_ken')  # port unused
    osken_log.init_log()
    ovs_groups.apply_parser_fixes()
    if not tls:
        osken_controller.OpenFlowController.server_loop = lambda self, *ports: serve_unix(path)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _exit_now)
    check_app_file()
    run_apps([app_module])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        sys.exit('usage: python -m controller.launcher APP SOCKET [os-ken args]')
    run(argv[0], argv[1], argv[2:])


if __name__ == '__main__':
    main()
