"""Every file the testbed reads or writes goes through here: bounded reads, safe writes.

Writes: a file goes into a directory the caller names, under a name the testbed derived and
checked (`checked_name`: no path separator, no leading dot, at most NAME_MAX characters), by a
temporary file made with O_CREAT|O_EXCL|O_NOFOLLOW in that same directory and renamed over the
target: a reader never sees half a file, and a symlink planted at the target is replaced, never
followed (its victim stays as it was). A target the invoking user could not write (a read-only
file, or one that is not a regular file) is refused, even when we run as root.

Output paths a user names (--out, --png, capture -w) follow one rule (`output_problem`, checked
before anything runs): the output directory is not a symbolic link, and no directory the path
is looked up in could have its entries swapped by another user (writable by others without the
sticky bit; `shared/out` in a world-writable `shared/` may be a link by the time root writes).
The writes then open that directory with O_NOFOLLOW and write by descriptor.

Reads (testbed/core/reading.py, the same names here): regular files only, a size cap per kind,
UTF-8 only, the parsers' limits caught; every problem one line (ParamError) naming the file.
"""
from __future__ import annotations

import errno
import json
import os
import secrets
import stat
import unicodedata
from pathlib import Path

from testbed.core.errors import ParamError, TestbedError
from testbed.core.reading import (  # noqa: F401  (the readers and their caps, here too)
    ANSWERS_MAX,
    EXPERIMENT_MAX,
    KB,
    MB,
    RESULT_MAX,
    RESULTS_DIRS_MAX,
    RESULTS_FILES_MAX,
    STATE_MAX,
    load_json,
    load_toml,
    parse_json,
    parse_toml,
    read_bytes,
    read_text,
    shown,
)

NAME_MAX = 120                 # characters in a name the testbed writes (the kernel's is 255 bytes)
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
        dfd = open_dir(directory)
    except OSError as e:
        raise TestbedError(f"cannot write into {shown(directory)}: {_why(e, directory)}") from None
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


def open_dir(path, dir_fd: int | None = None) -> int:
    """A descriptor of the directory `path`, never through a symbolic link at its own name."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)


def _why(e: OSError, path=None) -> str:
    """An OSError's reason; a directory opened with O_NOFOLLOW that is a link says so."""
    if e.errno == errno.ELOOP or (e.errno == errno.ENOTDIR and path is not None and os.path.islink(path)):
        return "a symbolic link (the testbed does not write through one)"
    return e.strerror or str(e)


def make_dirs(path) -> Path:
    """`mkdir -p` of an output directory (checked beforehand by output_problem): each missing
    directory made and entered by descriptor, a symbolic link at any of their names refused."""
    path = Path(path)
    where, missing, problem = walk(path)
    if problem:
        raise TestbedError(f"cannot create {shown(path)}: {problem}")
    try:
        fd = open_dir(where)
        try:
            for part in missing:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)      # the umask decides, as for mkdir -p
                except FileExistsError:
                    pass                                  # made meanwhile: entered below, not followed
                fd, parent = open_dir(part, dir_fd=fd), fd
                os.close(parent)
        finally:
            os.close(fd)
    except OSError as e:
        raise TestbedError(f"cannot create {shown(path)}: {_why(e, path)}") from None
    return path


# ---- output paths a user names ----

def trusted_owners() -> set[int]:
    """Who may own what root reads or writes through (a plug-in and the directories above it,
    the directories on the way to an output): root, us, and under sudo the user who ran it."""
    owners = {0, os.geteuid()}
    caller = os.environ.get("SUDO_UID", "")
    if os.geteuid() == 0 and caller.isdigit():
        owners.add(int(caller))
    return owners


def open_to_others(st: os.stat_result) -> bool:
    """Could another user replace entries of this directory? One that belongs to someone not
    trusted (trusted_owners: its owner may, sticky bit or not), or writable by all, or by a
    group when it is not ours, without the sticky bit."""
    if st.st_uid not in trusted_owners():
        return True
    if st.st_mode & stat.S_ISVTX:
        return False
    return bool(st.st_mode & 0o002 or (st.st_mode & 0o020 and st.st_uid != os.geteuid()))


def walk(path) -> tuple[Path, list[str], str | None]:
    """Look `path` up as the kernel would, component by component (symbolic links followed, but
    not at its last name): (the deepest existing directory, the names missing below it, a
    problem or None). A problem: a directory looked in that another user could change
    (open_to_others), a symbolic link at the last name or one another user owns, a component
    that is not a directory."""
    pending = list(reversed(Path(path).parts)) if Path(path).is_absolute() else \
        list(reversed([*Path(os.getcwd()).parts, *Path(path).parts]))
    where, links = Path("/"), 0
    pending.pop()                                          # "/"
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            where = where.parent
            continue
        st = os.stat(where)
        if open_to_others(st):
            whose = "is open to other users" if st.st_uid in trusted_owners() else \
                f"belongs to another user (uid {st.st_uid})"
            return where, [], f"{shown(where)} {whose}, who could swap {part!r} in it"
        try:
            st = os.lstat(where / part)
        except FileNotFoundError:
            return where, [p for p in [part, *reversed(pending)] if p not in ("", ".")], None
        if stat.S_ISLNK(st.st_mode):
            if not any(p not in ("", ".") for p in pending):
                return where, [], f"{shown(where / part)} is a symbolic link (name a directory)"
            if st.st_uid not in (0, os.geteuid()):
                return where, [], f"{shown(where / part)} is another user's symbolic link"
            links += 1
            if links > 40:
                return where, [], f"{shown(path)}: too many symbolic links"
            target = Path(os.readlink(where / part))
            pending.extend(reversed(target.parts[1:] if target.is_absolute() else target.parts))
            where = Path("/") if target.is_absolute() else where
            continue
        if not stat.S_ISDIR(st.st_mode):
            return where, [], f"{shown(where / part)} is not a directory"
        where = where / part
    return where, [], None


def output_problem(path: str, directory: bool = False) -> str | None:
    """Why a user-named output cannot be written, or None; nothing is created. A directory
    (--out): one that exists, or that make_dirs can make in a writable one; a file (--png, -w):
    in an existing directory, under a name write_file (or create_file) may write. Both looked
    up by walk() (no link at the directory's name, no directory others could change)."""
    if not path:
        return "is empty"
    try:
        target = Path(path)
        if not directory and (path.endswith("/") or target.name in ("", ".", "..")):
            return "is a directory; name a file in it"
        where, missing, problem = walk(target if directory else target.parent)
        if problem:
            return problem
        if not directory and missing:
            return f"directory {shown(target.parent)} does not exist"
        st = os.stat(where)
        if not (user_may_write(st) and os.access(where, os.W_OK | os.X_OK)) and (missing or not directory):
            return f"{shown(where)} is not writable"
        if not directory:
            return target_problem(where, target.name)
    except OSError as e:
        return f"not a usable path ({e.strerror or e})"
    except ValueError as e:                  # a NUL byte
        return f"not a usable path ({e})"
    return None


def create_file(path, replace: bool = False) -> int:
    """A descriptor for writing the user-named file `path` (checked by output_problem): made new
    (O_EXCL) unless `replace`, then an existing regular file we may write is truncated; never
    through a symbolic link, never a FIFO or device. TestbedError (one line) otherwise."""
    path = Path(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        dfd = open_dir(path.parent)
        try:
            fd = os.open(checked_name(path.name, "file name"), flags | (0 if replace else os.O_EXCL),
                         0o644, dir_fd=dfd)
        finally:
            os.close(dfd)
    except FileExistsError:
        raise TestbedError(f"{shown(path)} exists (not replaced unless asked)") from None
    except OSError as e:
        raise TestbedError(f"cannot write {shown(path)}: {_why(e, path.parent)}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or not user_may_write(st):
        os.close(fd)
        raise TestbedError(f"{shown(path)}: not a regular file the user may write; left alone")
    os.ftruncate(fd, 0)
    os.set_blocking(fd, True)
    return fd


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
