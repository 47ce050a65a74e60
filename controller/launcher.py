"""Run an os-ken app in-process (os-ken 4.x ships no osken-manager).

    python -m controller.launcher APP_MODULE_OR_PATH PORT [extra os-ken args]

Listens on 127.0.0.1 only.  SIGTERM/SIGINT end the process at once with
status 0: os-ken's default "native" hub runs apps in non-daemon threads that
it cannot kill, so a normal shutdown (AppManager.close) would hang.
"""
import logging
import os
import signal
import sys

# isort: off
from os_ken import cfg
from os_ken import log as osken_log
# app_manager first: importing os_ken.controller.controller first hits a
# circular import inside os-ken.
from os_ken.base.app_manager import AppManager
import os_ken.controller.controller  # noqa: F401,E402  registers --ofp-* opts
# isort: on

from controller import ofp15


def _exit_now(signum, _frame):
    logging.getLogger(__name__).info('signal %d: exiting', signum)
    logging.shutdown()
    os._exit(0)


def run(app_module, port, extra_args=()):
    """Serve OpenFlow on 127.0.0.1:``port`` with ``app_module`` (a module name
    or a path to a .py file); ``extra_args`` are more os-ken options, e.g.
    ``['--verbose']``.  Applies ofp15.apply_parser_fixes().  Blocks until
    SIGTERM/SIGINT, which exit the process.  Call from the main thread."""
    cfg.CONF(args=['--ofp-listen-host', '127.0.0.1',
                   '--ofp-tcp-listen-port', str(port), *extra_args],
             project='os_ken')
    osken_log.init_log()
    ofp15.apply_parser_fixes()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _exit_now)
    AppManager.run_apps([app_module])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        sys.exit('usage: python -m controller.launcher APP PORT [os-ken args]')
    run(argv[0], int(argv[1]), argv[2:])


if __name__ == '__main__':
    main()
