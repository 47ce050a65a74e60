"""Is this a controller app os-ken can run? Asked by the testbed before it builds anything.

    python -m controller.appcheck APP FD       (APP: a module name or a path to a .py file)

Loads APP the way os-ken's AppManager.load_app does (the same import, the same rule: the first
OSKenApp subclass defined in that module itself) and writes one JSON line to file descriptor FD
(a pipe of the caller's): {"class": NAME, "versions": [..] or null (any)} for an app, {"error":
ONE LINE} for anything else (no such module, a syntax error, a module that raises while
imported, no OSKenApp subclass), then ends at once (os._exit): what the app itself prints, at
import or in atexit handlers, never mixes with the answer, and its exit hooks never run. Run in
a process of its own (the testbed never imports a user's app), with bytecode writing off so that
looking leaves nothing behind.
"""
import json
import os
import sys
from pathlib import Path

sys.dont_write_bytecode = True


def describe(app: str) -> dict:
    """{"class": NAME, "versions": [..] or None} of `app`; SystemExit(one line) if it is no app."""
    path = Path(app)
    if path.suffix == ".py" and path.is_file():
        try:    # os-ken would retry a file that does not parse as a module name: say what it is
            compile(path.read_bytes(), app, "exec")
        except SyntaxError as e:
            raise SystemExit(f"a syntax error at line {e.lineno}: {e.msg}") from None
        except ValueError as e:     # e.g. null bytes in the source
            raise SystemExit(f"not Python source: {e}") from None
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
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: python -m controller.appcheck APP FD", file=sys.stderr)
        sys.exit(2)
    try:
        answer = describe(argv[0])
    except SystemExit as e:
        answer = {"error": str(e.code)[:500]}
    with os.fdopen(int(argv[1]), "w") as out:
        out.write(json.dumps(answer) + "\n")
    os._exit(0)     # no atexit hook, no flush of what the app buffered


if __name__ == "__main__":
    main()
