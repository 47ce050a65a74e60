"""Is this a controller app os-ken can run? Asked by the testbed before it builds anything.

    python -m controller.appcheck APP          (APP: a module name or a path to a .py file)

Loads APP the way os-ken's AppManager.load_app does (the same import, the same rule: the first
OSKenApp subclass defined in that module itself) and prints one JSON line: the class's name and
the OpenFlow versions it declares (OFP_VERSIONS; null: any). Anything wrong is one line on
stderr and exit status 2: no such module, a module that raises while imported, no OSKenApp
subclass in it. Run in a process of its own (the testbed never imports a user's app), with
bytecode writing off so that looking leaves nothing behind.
"""
import json
import sys

sys.dont_write_bytecode = True


def describe(app: str) -> dict:
    """{"class": NAME, "versions": [..] or None} of `app`; SystemExit(one line) if it is no app."""
    # isort: off
    from os_ken.base.app_manager import AppManager   # first: os-ken's circular import (launcher.py)
    import os_ken.controller.controller  # noqa: F401  registers the options apps may read
    # isort: on
    try:
        cls = AppManager().load_app(app)
    except ModuleNotFoundError as e:
        raise SystemExit(f"no module named {e.name!r}") from None
    except BaseException as e:   # the user's module raised (or exited) while imported
        raise SystemExit(f"importing it raised {type(e).__name__}: {e}".splitlines()[0]) from None
    if cls is None:
        raise SystemExit("defines no OSKenApp subclass (os-ken runs the first one a module "
                         "defines itself, not one it imports)")
    versions = getattr(cls, "OFP_VERSIONS", None)
    return {"class": cls.__name__, "versions": None if versions is None else sorted(versions)}


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        raise SystemExit("usage: python -m controller.appcheck APP")
    try:
        print(json.dumps(describe(argv[0])))
    except SystemExit as e:
        print(e.code, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
