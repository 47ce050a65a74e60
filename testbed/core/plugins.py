"""User plug-ins: a Python file (`--custom FILE.py`, `custom = "file.py"` in an experiment file)
run once, whose top level calls the registries' `register()` (families today; policies, fault
kinds and scenarios as their registries land, with no change here).

Generic on purpose: this module knows no registry. A registry that must name the file to another
process (the controller rebuilds a loaded family from a run's spec.json) asks `loading()` while
the file runs, as `families.register` does, and passes `digest(path)` along with the path.

A plug-in runs with the caller's rights (root, for `up`), so it is trusted as ssh trusts a key
file (`trust_problem`): the file and every directory above it belong to root or the caller (the
user who ran sudo, too) and no one else may write them (a world-writable directory only with the
sticky bit, as /tmp has it). The file is read once (at most PLUGIN_MAX bytes) and what runs is
exactly those bytes; its sha256 is kept, and a later process that loads it again (the controller,
`trace`, `capture`) gives the digest and is refused if the file changed since.

Anything the file raises (SystemExit and KeyboardInterrupt too), a missing, untrusted or
oversized file or one that is not Python becomes one ParamError line naming the file and the
problem (exit status 2), raised before anything is built. What its top level prints goes to
stderr: stdout is for the command's own output (the `--json` envelope).
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import stat
import sys
import zlib
from pathlib import Path
from types import ModuleType

from testbed.core import files
from testbed.core.errors import ParamError, TestbedError

PLUGIN_MAX = 1024 * 1024       # bytes in a plug-in file: far above any hand-written one

_loaded: dict[str, ModuleType] = {}     # resolved path -> its module, each file run once
_digests: dict[str, str] = {}           # resolved path -> sha256 of the bytes that ran
_loading: list[str] = []               # the files running now (a plug-in may load another)


def loading() -> str | None:
    """The plug-in file whose top level is running now, or None."""
    return _loading[-1] if _loading else None


def loaded(path) -> bool:
    return str(resolve(path)) in _loaded


def digest(path) -> str | None:
    """The sha256 (hex) of what ran of the plug-in `path`, None if it was not loaded."""
    return _digests.get(str(resolve(path)))


def resolve(path) -> Path:
    """`path` with its symbolic links resolved; ParamError (one line) for a loop."""
    try:
        return Path(path).resolve()
    except RuntimeError:                      # Python 3.11's "Symlink loop from ..."
        raise ParamError(f"{path}: a loop of symbolic links") from None
    except OSError as e:
        raise ParamError(f"{path}: {e.strerror}") from None


def fingerprint(path) -> str:
    """digest(path) if it ran here, else the sha256 of the file as it is now (checked by read)."""
    return digest(path) or hashlib.sha256(read(path)[1]).hexdigest()


def _others_may_write(st: os.stat_result) -> bool:
    """Group or others may write it (a directory with the sticky bit: they may not swap ours)."""
    if stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX:
        return False
    return bool(st.st_mode & 0o022)


def trust_problem(resolved: Path, st: os.stat_result) -> str | None:
    """Why the plug-in at `resolved` (symbolic links resolved; `st` its status) is not to be
    run, or None: its owner, its mode, and those of every directory above it (ssh's rule)."""
    owners = files.trusted_owners()     # under sudo, the caller's own file is theirs to run
    for where, status in [(resolved, st), *((d, None) for d in resolved.parents)]:
        try:
            status = status or os.stat(where)
        except OSError as e:
            return f"{where}: {e.strerror}"
        kind = "the plug-in" if where == resolved else f"its directory {where}"
        if status.st_uid not in owners:
            return f"{kind} belongs to another user (uid {status.st_uid}); not run"
        if _others_may_write(status):
            return f"{kind} may be written by other users (mode {stat.S_IMODE(status.st_mode):o}); not run"
    return None


def read(path, sha256: str | None = None) -> tuple[Path, bytes]:
    """(the resolved path, its bytes) of the plug-in `path`, checked (trust_problem, PLUGIN_MAX,
    `sha256` when given); ParamError (one line) otherwise."""
    shown = str(path)
    resolved = resolve(path)
    if resolved.suffix != ".py":
        raise ParamError(f"{shown}: a plug-in is a Python file (.py)")
    try:         # every directory above is trusted by now or refused below: nobody swaps it
        fd = os.open(resolved, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ParamError(f"{shown}: no such plug-in file") from None
    except OSError as e:
        raise ParamError(f"{shown}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ParamError(f"{shown}: not a regular file")
        problem = trust_problem(resolved, st)
        if problem:
            raise ParamError(f"{shown}: {problem}")
        if st.st_size > PLUGIN_MAX:
            raise ParamError(f"{shown}: {st.st_size:,} bytes, more than the {PLUGIN_MAX:,} allowed")
        data = os.read(fd, PLUGIN_MAX + 1)
        while data and len(data) <= PLUGIN_MAX and (more := os.read(fd, PLUGIN_MAX + 1 - len(data))):
            data += more
    except OSError as e:
        raise ParamError(f"{shown}: {e.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > PLUGIN_MAX:
        raise ParamError(f"{shown}: more than the {PLUGIN_MAX:,} bytes allowed")
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise ParamError(f"{shown}: changed since it was checked (its sha256 differs); not run")
    return resolved, data


def load(path: str | Path, sha256: str | None = None) -> ModuleType:
    """Run the plug-in file `path` once (a second call returns the same module); ParamError (one
    line, `FILE: problem`) if it is missing, untrusted, too big, not a .py file, differs from
    `sha256` (when given), or raises."""
    shown = str(path)
    key = str(resolve(path))
    if key in _loaded:
        if sha256 is not None and _digests[key] != sha256:
            raise ParamError(f"{shown}: changed since it was checked (its sha256 differs); not run")
        return _loaded[key]
    resolved, data = read(path, sha256)
    name = f"hpn_plugin_{resolved.stem}_{zlib.crc32(key.encode()):08x}"   # one per file
    spec = importlib.util.spec_from_loader(name, loader=None, origin=key)
    module = importlib.util.module_from_spec(spec)
    module.__file__ = key
    sys.modules[name] = module          # where dataclasses look up the module's annotations
    _loading.append(key)
    try:
        code = compile(data, key, "exec", dont_inherit=True)
        with contextlib.redirect_stdout(sys.stderr):    # stdout is the command's
            exec(code, module.__dict__)  # noqa: S102 - a plug-in is code to run, checked above
    except ParamError as e:             # a registry refused what it registers
        del sys.modules[name]
        raise ParamError(f"{shown}: {e}") from None
    except SyntaxError as e:
        del sys.modules[name]
        raise ParamError(f"{shown}{f':{e.lineno}' if e.lineno else ''}: {_one_line(e.msg)}") from None
    except BaseException as e:  # noqa: BLE001 - a user's file may raise anything (SystemExit too)
        del sys.modules[name]
        raise ParamError(f"{shown}{_line_in(e, key)}: {type(e).__name__}"
                         f"{': ' + _one_line(e) if _one_line(e) else ''}") from None
    finally:
        _loading.pop()
    _loaded[key] = module
    _digests[key] = hashlib.sha256(data).hexdigest()
    return module


@contextlib.contextmanager
def blamed():
    """Anything a loaded plug-in's code raises later (a family's build, a policy; SystemExit and
    KeyboardInterrupt too) becomes one ParamError line naming the file and its line; what the
    testbed raises itself, and a real signal's unwinding, pass as they are."""
    from testbed.core import interrupts
    try:
        yield
    except (ParamError, TestbedError):
        raise
    except BaseException as e:  # noqa: BLE001 - a user's code may raise anything
        path = _deepest_plugin(e)
        if path is None or (isinstance(e, (KeyboardInterrupt, interrupts.Terminated))
                            and interrupts.last is not None):
            raise
        text = _one_line(e)
        raise ParamError(f"{path}{_line_in(e, path)}: {type(e).__name__}"
                         f"{': ' + text if text else ''}") from None


def _deepest_plugin(error: BaseException) -> str | None:
    """The loaded plug-in file of the deepest frame of `error` that is in one, else None."""
    found, tb = None, error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename in _loaded:
            found = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    return found


def _one_line(error) -> str:
    """`error`'s message on one line, cut at 500 characters ('' if it cannot even be shown)."""
    try:
        text = str(error)[:2000]
    except BaseException:  # noqa: BLE001 - a plug-in's own __str__ may raise anything
        return ""
    return " ".join(text.split())[:500]


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
