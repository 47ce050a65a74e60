"""Bounded reads (re-exported by testbed/core/files.py, where every file the testbed reads or
writes goes through): regular files only (a FIFO, device or directory is refused before a byte
is read, so `/dev/zero` cannot grow memory and a FIFO cannot block), at most a size cap per kind,
UTF-8 only, and the parsers' own limits (nesting deeper than the recursion limit, integers of
more than 4,300 digits) caught: every problem is one line, a ParamError naming the file.
"""
from __future__ import annotations

import json
import os
import stat

from testbed.core.compat import tomllib
from testbed.core.errors import ParamError

KB, MB = 1024, 1024 * 1024
# size caps per kind of file read (bytes): far above anything the testbed writes itself
EXPERIMENT_MAX = 1 * MB        # an experiment file (TOML)
ANSWERS_MAX = 256 * KB         # a lab's answers (TOML)
RESULT_MAX = 64 * MB           # a result JSON (series of a segment run are a few MB)
STATE_MAX = 16 * MB            # a run's state.json, spec.json, status.json; servers.json
RESULTS_FILES_MAX = 10_000     # JSON files under one results directory
RESULTS_DIRS_MAX = 10_000      # directories looked in under it (`--results /` would walk the disk)


def shown(path) -> str:
    """A path for a one-line message: repr-quoted, long ones cut in the middle."""
    text = str(path)
    return repr(text if len(text) <= 80 else f"{text[:60]}...{text[-16:]}")


# ---- reading ----

def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_bytes(path, what: str, limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them; ParamError otherwise."""
    where = f"{what} {shown(path)}"
    try:
        st = os.stat(path)            # a symlink is followed: what it names must be a regular file
        if not stat.S_ISREG(st.st_mode):
            raise ParamError(f"{where}: {_kind(st.st_mode)}, not a regular file")
        # O_NONBLOCK: a FIFO swapped in after the check cannot block the open
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (OSError, ValueError) as e:
        raise ParamError(f"{where}: {getattr(e, 'strerror', None) or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ParamError(f"{where}: {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise ParamError(f"{where}: {st.st_size:,} bytes, more than the {limit:,} allowed")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 * MB, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise ParamError(f"{where}: more than the {limit:,} bytes allowed")
        return b"".join(chunks)
    except OSError as e:
        raise ParamError(f"{where}: {e.strerror or e}") from None
    finally:
        os.close(fd)


def read_text(path, what: str, limit: int) -> str:
    """read_bytes as UTF-8 text (a BOM-less UTF-16 or Latin-1 file is refused, naming the byte)."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ParamError(f"{what} {shown(path)}: not UTF-8 text (byte {e.start:,} is "
                         f"0x{data[e.start]:02x})") from None


def parse_json(text: str, where: str):
    """json.loads with its limits as one line (ParamError)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ParamError(f"{where}: nested too deeply") from None
    except ValueError as e:          # JSONDecodeError, integers over 4,300 digits
        raise ParamError(f"{where}: not valid JSON: {str(e).splitlines()[0][:120]}") from None


def parse_toml(text: str, where: str) -> dict:
    """tomllib.loads with its limits as one line (ParamError); the message keeps tomllib's line."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise ParamError(f"{where}: nested too deeply") from None
    except tomllib.TOMLDecodeError as e:
        raise ParamError(f"{where}: not valid TOML: {str(e).splitlines()[0][:160]}") from None
    except ValueError as e:         # an integer of more than 4,300 digits
        raise ParamError(f"{where}: not valid TOML: {str(e).splitlines()[0][:120]}") from None


def load_json(path, what: str, limit: int = STATE_MAX):
    return parse_json(read_text(path, what, limit), f"{what} {shown(path)}")


def load_toml(path, what: str, limit: int) -> tuple[dict, str]:
    """(data, text) of a TOML file, bounded and checked."""
    text = read_text(path, what, limit)
    return parse_toml(text, f"{what} {shown(path)}"), text
