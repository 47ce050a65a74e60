"""How the command line prints: rich tables on a terminal, JSON for machines.

Every `--json` output is one envelope, the same for every subcommand:

    {"hpn_testbed": VERSION, "command": "topo show", "ok": true, "result": ...}
    {"hpn_testbed": VERSION, "command": "up", "ok": false, "error": "...", "exit_status": 2}

`ok` says the command ran (a failed check is in its result, and in the exit status); an
error under `--json` is the second form on stdout, besides its one line on stderr.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

from testbed.core.errors import ParamError

_mode = {"json": False, "command": "", "printed": False}


def begin(argv: list[str]) -> None:
    """Note, before parsing, whether this invocation asked for JSON (so that even a usage
    error comes as JSON) and which subcommand it names."""
    _mode.update(json="--json" in argv, printed=False,
                 command=" ".join(a for a in argv[:2] if not a.startswith("-")))


def set_command(name: str) -> None:
    _mode["command"] = name


def version() -> str:
    """The installed package's version (its metadata, not a constant repeated here)."""
    from importlib import metadata
    try:
        return metadata.version("hpn-testbed")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def fail(line: str, status: int) -> None:
    """An error: its one line on stderr; under --json also the error envelope on stdout,
    unless a result was already printed (one JSON document per invocation)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:        # SIGHUP: the terminal went away; or stderr's reader is gone
        pass
    if _mode["json"] and not _mode["printed"]:
        _emit({"ok": False, "error": line.removeprefix("hpn-testbed: "), "exit_status": status})


def _emit(body: dict) -> None:
    _mode["printed"] = True
    print(json.dumps({"hpn_testbed": version(), "command": _mode["command"], **body},
                     indent=2, default=str), flush=True, file=_mode.get("stdout") or sys.stdout)


@contextlib.contextmanager
def envelope_only():
    """Under --json, stdout holds the envelope alone: whatever else prints there meanwhile (a
    plug-in's family or policy, a user's code) goes to stderr."""
    if not _mode["json"]:
        yield
        return
    _mode["stdout"] = sys.stdout
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        _mode.pop("stdout", None)


def reader_gone() -> None:
    """stdout's reader went away (`| head`): point stdout at /dev/null, so that nothing more,
    not even the interpreter's last flush, fails on it."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


MIN_WIDTH = 40      # columns: a terminal (or COLUMNS) narrower than this is taken as this wide


def console():
    """A rich console at least MIN_WIDTH wide (COLUMNS=0 would make rich print nothing)."""
    from rich.console import Console
    con = Console()
    if con.width < MIN_WIDTH:
        con.width = MIN_WIDTH
    return con


class Markup(str):
    """Text the testbed styled itself (`[green]pass[/green]`): table() shows it as rich markup.
    Every other string reaching rich through here is user-given (a path, a name, a file's text)
    and shown literally, so a `[/x]` in it prints as written instead of raising MarkupError."""


def markup(text: str) -> Markup:
    return Markup(text)


def escape(text) -> str:
    """User-given text (a name, a path, a file's description) for rich: `[/x]` stays literal."""
    if isinstance(text, Markup):
        return text
    from rich.markup import escape as rich_escape
    return rich_escape(str(text))


def table(title, columns, rows):
    """A rich table whose title, headers and cells are shown literally (escaped), except the
    cells the testbed styled itself (Markup, e.g. styled())."""
    from rich.table import Table
    t = Table(title=None if title is None else escape(title))
    for c in columns:
        t.add_column(escape(c))
    for r in rows:
        t.add_row(*[escape(x) for x in r])
    return t


def print_json(data) -> None:
    """A command's result, in the envelope (see above)."""
    _emit({"ok": True, "result": data})


def styled(verdict: str) -> Markup:
    colour = {"reproduced": "green", "invalid": "yellow"}.get(verdict, "red")
    return Markup(f"[{colour}]{escape(verdict)}[/{colour}]")


FIGURE_FORMATS = ("png", "svg", "pdf")


def check_figure(flag: str, path: str) -> None:
    """A picture's file: its extension names the format (png, svg, pdf), else one line."""
    suffix = Path(path).suffix.lstrip(".").lower()
    if suffix not in FIGURE_FORMATS:
        raise ParamError(f"{flag} {path[:80]!r}: the extension names the format: "
                         f"{', '.join('.' + f for f in FIGURE_FORMATS)}")
    check_output(flag, path)


def check_output(flag: str, path: str, directory: bool = False, force: str | None = None) -> None:
    """Refuse an output path with one line (ParamError) before anything runs or is created: the
    rules of testbed/core/files.py (output_problem). A file (directory=False) goes into an
    existing, writable directory, under a name files.py may write (no leading dot, a length
    bound; not a symlink, a directory or a read-only file); a directory is an existing writable
    one, or one `mkdir -p` can create, never an existing file nor a symbolic link; and no
    directory on the way is one another user could swap entries of. With `force` (the flag that
    allows it, e.g. "--force"), an existing file is refused unless that flag was given: pass
    force=None once it was."""
    from testbed.core import files
    problem = files.output_problem(path, directory)
    if not problem and force and os.path.lexists(path):
        problem = f"exists (give {force} to replace it)"
    if problem:
        raise ParamError(f"{flag} {files.shown(path)}: {problem}")
