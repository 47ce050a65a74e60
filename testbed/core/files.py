"""Every file the testbed reads or writes goes through here: bounded reads, safe writes.

Writes: a file goes into a directory the caller names, under a name the testbed derived and
checked (`checked_name`: no path separator, no leading dot, at most NAME_MAX characters), by a
temporary file made with O_CREAT|O_EXCL|O_NOFOLLOW in that same directory and renamed over the
target: a reader never sees half a file, and a symlink planted at the target is replaced, never
followed (its victim stays as it was). A target the invoking user could not write (a read-only
file, or one that is not a regular file) is refused, even when we run as root.

Reads: regular files only (a FIFO, device or directory is refused before a byte is read, so
`/dev/zero` cannot grow memory and a FIFO cannot block), at most a size cap per kind, UTF-8
only, and the parsers' own limits (nesting deeper than the recursion limit, integers of more
than 4,300 digits) caught: every problem is one line, a ParamError naming the file.
"""
from __future__ import annotations

import json
import os
import secrets
import stat
import unicodedata
from pathlib import Path

from testbed.core.compat import tomllib
from testbed.core.errors import ParamError, TestbedError

NAME_MAX = 120                 # characters in a name the testbed writes (the kernel's is 255 bytes)
KB, MB = 1024, 1024 * 1024
# size caps per kind of file read (bytes): far above anything the testbed writes itself
EXPERIMENT_MAX = 1 * MB        # an experiment file (TOML)
ANSWERS_MAX = 256 * KB         # a lab's answers (TOML)
RESULT_MAX = 64 * MB           # a result JSON (series of a segment run are a few MB)
STATE_MAX = 16 * MB            # a run's state.json, spec.json, status.json; servers.json
RESULTS_FILES_MAX = 10_000     # JSON files under one results directory


def shown(path) -> str:
    """A path for a one-line message: repr-quoted, long ones cut in the middle."""
    text = str(path)
    return repr(text if len(text) <= 80 else f"{text[:60]}...{text[-16:]}")


# ---- names ----

def name_problem(name: str) -> str | None:
    """Why `name` cannot be a file name the testbed writes, or None."""
    if not isinstance(name, str) or not name:
        return "is empty"
    if "/" in name or "\\" in name or "\0" in name:
        return "holds a path separator (a name, not a path)"
    if name.startswith("."):
        return "starts with a dot"
    if len(name) > NAME_MAX:
        return f"is {len(name)} characters long (at most {NAME_MAX})"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "holds a control character"
    if any(unicodedata.category(c) in ("Cf", "Cc", "Zl", "Zp") for c in name):
        return "holds an invisible format character (e.g. U+202E, which shows text reversed)"
    return None


def checked_name(name: str, what: str = "name") -> str:
    problem = name_problem(name)
    if problem:
        raise ParamError(f"{what} {shown(name)}: {problem}")
    return name


# ---- who may write ----

def user_may_write(st: os.stat_result) -> bool:
    """Would the user we run as be allowed to write a file with this status? As root: only what
    has a write bit for someone (a file made read-only stays untouched, as it would for anyone)."""
    uid, mode = os.geteuid(), st.st_mode
    if uid == 0:
        return bool(mode & 0o222)
    if st.st_uid == uid:
        return bool(mode & stat.S_IWUSR)
    if st.st_gid in {os.getegid(), *os.getgroups()}:
        return bool(mode & stat.S_IWGRP)
    return bool(mode & stat.S_IWOTH)


def target_problem(directory: Path, name: str) -> str | None:
    """Why `directory`/`name` cannot be written (by write_file), or None; nothing is created."""
    problem = name_problem(name)
    if problem:
        return f"name {name!r} {problem}"
    try:
        dst = os.stat(directory)
    except OSError as e:
        return f"{shown(directory)}: {e.strerror}"
    if not stat.S_ISDIR(dst.st_mode):
        return f"{shown(directory)} is not a directory"
    if not user_may_write(dst) or not os.access(directory, os.W_OK | os.X_OK):
        return f"{shown(directory)} is not writable"
    try:
        st = os.lstat(Path(directory) / name)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"{name}: {e.strerror}"
    if stat.S_ISLNK(st.st_mode):
        return f"{name} is a symbolic link (the testbed does not write through one)"
    if not stat.S_ISREG(st.st_mode):
        return f"{name} exists and is not a regular file"
    if not user_may_write(st):
        return f"{name} is not writable"
    return None


# ---- writing ----

def write_file(directory, name: str, data: bytes | str, mode: int = 0o644) -> Path:
    """Write `data` to `directory`/`name` atomically, never through a symlink (see above).
    TestbedError (one line) if it cannot."""
    directory = Path(directory)
    checked_name(name, "file name")
    payload = data.encode() if isinstance(data, str) else data
    try:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise TestbedError(f"cannot write into {shown(directory)}: {e.strerror}") from None
    tmp = f".{name[:NAME_MAX]}.{secrets.token_hex(4)}.tmp"
    try:
        _refuse_existing(dfd, directory, name)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     mode, dir_fd=dfd)
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)   # replaces a symlink, never follows it
    except OSError as e:
        try:
            os.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
        raise TestbedError(f"cannot write {shown(directory / name)}: {e.strerror or e}") from None
    finally:
        os.close(dfd)
    return directory / name


def _refuse_existing(dfd: int, directory: Path, name: str) -> None:
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISLNK(st.st_mode) and (not stat.S_ISREG(st.st_mode) or not user_may_write(st)):
        raise TestbedError(f"{shown(directory / name)}: not a regular file the user may write; left alone")


def write_json(directory, name: str, data, indent: int | None = None) -> Path:
    return write_file(directory, name, json.dumps(data, indent=indent, default=str))


def make_dirs(path) -> Path:
    """`mkdir -p` of an output directory (checked beforehand by the caller's preflight)."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TestbedError(f"cannot create {shown(path)}: {e.strerror or e}") from None
    return path


# ---- a private directory in a shared place ----

def _swappable(st: os.stat_result) -> bool:
    """Could someone other than root and us rename or replace entries of this directory?"""
    foreign = st.st_uid not in (0, os.geteuid())
    open_to_others = st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX
    return bool(foreign or open_to_others)


def private_dir(path) -> tuple[Path | None, str | None]:
    """`path` as a directory only we can change, made (mode 0700) if absent: (the resolved
    path, None), or (None, why not). For directories under a place every user can write
    (/var/tmp): a local user who made the name first, as their own directory or as a symlink,
    must not get root's files nor steer root's writes. Refused: a symlink, a directory not
    ours or that others may write, and a parent that someone else could swap it in (one not
    owned by root or us, or writable by others without the sticky bit), up to /."""
    path = Path(path)
    parent = Path(os.path.realpath(path.parent))
    for where in (parent, *parent.parents):
        try:
            if _swappable(os.stat(where)):
                return None, f"{shown(where)} is open to other users"
        except OSError as e:
            return None, f"{shown(where)}: {e.strerror}"
    path = parent / path.name
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        return None, f"{shown(path)}: {e.strerror}"
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        return None, f"{shown(path)} is not a directory (a symbolic link or a file)"
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return None, f"{shown(path)} is another user's or open to other users"
    return path, None


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
