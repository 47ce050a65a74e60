"""Open vSwitch's one send buffer on the userspace datapath, raised for a run that asks
(HPN_OVS_SNDBUF=1, Options(send_buffer=True)) and put back.

On the userspace datapath ovs-vswitchd sends every frame, on every port of every bridge,
through one unbound AF_PACKET socket (`af_packet_sock()`, OVS's lib/netdev-linux.c). A frame
waiting in a switch port's qdisc is charged to that socket's send buffer until it leaves, so
the kernel default (net.core.wmem_default, about 95 frames of 1,514 B) caps all the fabric's
switch queues together; past it OVS drops what it sends, on every port, uncounted
(docs/internals.md, "The MTU"). The emulated queues are the bfifos (48 KB a port), so the
buffer is raised to what every switch port's bfifo can hold at once, in the kernel's own
accounting (a frame's truesize is about 1.5x its length at 1500 bytes: TRUESIZE). That lets
no more memory be used than the fabric's qdiscs may hold: a frame stops counting against the
buffer when it leaves its qdisc (the veth orphans it).

The socket is ovs-vswitchd's, shared by any other userspace bridge on the machine, so it is
changed as rcu.py changes its setting: only upwards, the old size recorded in the run state
before it is written (with the daemon's PID, start time and the socket's inode, so a restarted
OVS is never touched), and put back by the teardown's last step (or `clean`). It is reached
with pidfd_getfd (Linux 5.6; root), a copy of OVS's descriptor whose setsockopt is the
socket's; where any step is not possible nothing changes and the run goes on as before. It is
not the default: with it, skeleton-probing's prober ran late (docs/internals.md, "The MTU").
"""
from __future__ import annotations

import ctypes
import os
import socket
from pathlib import Path

from testbed.emulation.run.processes import start_time

PREFIX = "ovs-sndbuf:"     # a run state's `knobs` entry: ovs-sndbuf:PID:START:INODE=BYTES
SO_SNDBUFFORCE = getattr(socket, "SO_SNDBUFFORCE", 32)
PIDFD_GETFD = 438          # the same number on every architecture (asm-generic, Linux 5.6)
TRUESIZE = 2               # kernel bytes charged per byte of frame queued, rounded up
ETH_P_NONE = "0000"        # the send socket's protocol: it receives nothing


def wanted(switch_ends: int, queue_bytes: int) -> int:
    """The buffer every switch port's bfifo full at once needs, in the kernel's accounting."""
    return TRUESIZE * queue_bytes * switch_ends


def send_socket_inode(packet_table: str, inodes: set[int]) -> int | None:
    """The inode of the one unbound, receive-nothing packet socket among `inodes`, from the
    text of /proc/net/packet (sk RefCnt Type Proto Iface R Rmem User Inode); None unless
    exactly one."""
    found = []
    for line in packet_table.splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 9 and cols[3] == ETH_P_NONE and cols[4] == "0" and int(cols[8]) in inodes:
            found.append(int(cols[8]))
    return found[0] if len(found) == 1 else None


def _pidfile() -> Path:
    from testbed.emulation.net.system import ovs_rundir
    return Path(ovs_rundir()) / "ovs-vswitchd.pid"


def _daemon() -> int | None:
    """ovs-vswitchd's PID from its root-owned pidfile, if that process is ovs-vswitchd."""
    try:
        path = _pidfile()
        st = path.stat()
        if st.st_uid != 0 or st.st_mode & 0o022:
            return None
        pid = int(path.read_text().split()[0])
        return pid if Path(f"/proc/{pid}/comm").read_text().strip() == "ovs-vswitchd" else None
    except (OSError, ValueError, IndexError):
        return None


def _socket_fds(pid: int) -> dict[int, int]:
    """inode -> descriptor number of each socket `pid` holds."""
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            out[int(target[8:-1])] = int(fd)
    return out


def _with_socket(pid: int, fd: int, use):
    """`use(sock)` on a copy of `pid`'s descriptor `fd` (pidfd_getfd): the same socket."""
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        mine = libc.syscall(PIDFD_GETFD, pidfd, fd, 0)
        if mine < 0:
            raise OSError(ctypes.get_errno(), "pidfd_getfd")
        sock = socket.socket(fileno=mine)
        try:
            return use(sock)
        finally:
            sock.close()
    finally:
        os.close(pidfd)


def _find() -> tuple[int, int, int] | None:
    """(PID, inode, descriptor) of ovs-vswitchd's send socket, if it has one yet."""
    pid = _daemon()
    if pid is None:
        return None
    try:
        fds = _socket_fds(pid)
        inode = send_socket_inode(Path("/proc/net/packet").read_text(), set(fds))
    except OSError:
        return None
    return None if inode is None else (pid, inode, fds[inode])


def _size(sock) -> int:
    return sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)


def current() -> int | None:
    """The size of ovs-vswitchd's send buffer now (None: no daemon or no send socket yet)."""
    found = _find()
    try:
        return None if found is None else _with_socket(found[0], found[2], _size)
    except OSError:
        return None


def _set(sock, nbytes: int) -> None:
    sock.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, nbytes // 2)   # the kernel doubles it


def raise_to(state, nbytes: int) -> int | None:
    """Raise ovs-vswitchd's send buffer to `nbytes` for this run, its old size recorded in
    `state` first; the size it has now, or None if nothing changed."""
    found = _find()
    if found is None:
        return None
    pid, inode, fd = found

    def change(sock) -> int | None:
        old = _size(sock)
        if old >= nbytes:
            return None
        state.add("knobs", f"{PREFIX}{pid}:{start_time(pid)}:{inode}={old}")
        _set(sock, nbytes)
        return _size(sock)
    try:
        return _with_socket(pid, fd, change)
    except OSError:
        return None


def restore(recorded: list[str]) -> list[str]:
    """Put back each recorded send buffer whose daemon and socket are still the ones recorded."""
    done = []
    for entry in recorded:
        if not entry.startswith(PREFIX):
            continue
        try:
            where, _, value = entry[len(PREFIX):].partition("=")
            pid, start, inode = (int(x) for x in where.split(":"))
            old = int(value)
            if start_time(pid) != start or _daemon() != pid:
                continue
            fd = _socket_fds(pid).get(inode)
            if fd is None:
                continue
            _with_socket(pid, fd, lambda s, old=old: _set(s, old))
            done.append(f"Open vSwitch's send buffer back to {old} B")
        except (OSError, ValueError):
            continue
    return done
