"""User plug-ins: a Python file (`--custom FILE.py`, `custom = "file.py"` in an experiment file)
run once, whose top level calls the registries' `register()` (families today; policies, fault
kinds and scenarios as their registries land, with no change here).

Generic on purpose: this module knows no registry. A registry that must name the file to another
process (the controller rebuilds a loaded family from a run's spec.json) asks `loading()` while
the file runs, as `families.register` does. Anything the file raises, a missing file or one that
is not Python becomes one ParamError line naming the file and the problem (exit status 2), raised
before anything is built.
"""
from __future__ import annotations

import importlib.util
import sys
import zlib
from pathlib import Path
from types import ModuleType

from testbed.core.errors import ParamError

_loaded: dict[str, ModuleType] = {}     # resolved path -> its module, each file run once
_loading: list[str] = []               # the files running now (a plug-in may load another)


def loading() -> str | None:
    """The plug-in file whose top level is running now, or None."""
    return _loading[-1] if _loading else None


def loaded(path) -> bool:
    return str(Path(path).resolve()) in _loaded


def load(path: str | Path) -> ModuleType:
    """Run the plug-in file `path` once (a second call returns the same module); ParamError (one
    line, `FILE: problem`) if it is missing, not a .py file, or raises."""
    shown = str(path)
    resolved = Path(path).resolve()
    key = str(resolved)
    if key in _loaded:
        return _loaded[key]
    if not resolved.is_file():
        raise ParamError(f"{shown}: no such plug-in file")
    if resolved.suffix != ".py":
        raise ParamError(f"{shown}: a plug-in is a Python file (.py)")
    name = f"hpn_plugin_{resolved.stem}_{zlib.crc32(key.encode()):08x}"   # one per file
    spec = importlib.util.spec_from_file_location(name, key)
    if spec is None or spec.loader is None:
        raise ParamError(f"{shown}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module          # where dataclasses look up the module's annotations
    _loading.append(key)
    try:
        spec.loader.exec_module(module)
    except ParamError as e:             # a registry refused what it registers
        del sys.modules[name]
        raise ParamError(f"{shown}: {e}") from None
    except SyntaxError as e:
        del sys.modules[name]
        raise ParamError(f"{shown}:{e.lineno}: {e.msg}") from None
    except Exception as e:  # noqa: BLE001 - a user's file may raise anything: one line
        del sys.modules[name]
        where = _line_in(e, key)
        raise ParamError(f"{shown}{where}: {type(e).__name__}: {' '.join(str(e).split())}") from None
    finally:
        _loading.pop()
    _loaded[key] = module
    return module


def _line_in(error: BaseException, path: str) -> str:
    """':LINE' of the deepest frame of `error` in the plug-in file, else ''."""
    line, tb = None, error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return f":{line}" if line else ""


def load_all(paths) -> None:
    """Load each plug-in of `paths` in order."""
    for path in paths:
        load(path)


def paths_in(argv: list[str]) -> list[str]:
    """The files `--custom FILE` / `--custom=FILE` name in a command line: loaded before the parser
    is built, so that what they register is among its choices (a family, a preset)."""
    found = []
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--custom" and i + 1 < len(argv):
            found.append(argv[i + 1])
        elif arg.startswith("--custom="):
            found.append(arg.split("=", 1)[1])
    return found
