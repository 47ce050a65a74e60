"""Open vSwitch's send buffer (testbed/emulation/net/sendbuf.py): which socket is OVS's send
socket, how large it is made, and a real socket of this process raised and put back through a
copy of its descriptor, recorded first; nothing put back that is not the recorded socket."""
import os
import socket

import pytest

from testbed.emulation.net import sendbuf
from testbed.emulation.run import teardown
from testbed.emulation.run.processes import start_time

TABLE = """sk               RefCnt Type Proto  Iface R Rmem   User   Inode
00000000782b3bb3 2      3    0000   0     0 0      0      1001
00000000782b3bb4 3      3    0003   7     1 0      0      1002
00000000782b3bb5 2      3    0000   0     0 0      0      2001
"""


def test_the_send_socket_is_the_daemons_one_unbound_packet_socket():
    assert sendbuf.send_socket_inode(TABLE, {1001, 1002}) == 1001   # 1002 receives on port 7
    assert sendbuf.send_socket_inode(TABLE, {1002}) is None         # no send socket yet
    assert sendbuf.send_socket_inode(TABLE, {1001, 2001}) is None   # two: not sure which
    assert sendbuf.send_socket_inode("", {1001}) is None


def test_the_buffer_holds_every_switch_ports_queue_in_the_kernels_accounting():
    assert sendbuf.wanted(100, 48_000) == sendbuf.TRUESIZE * 4_800_000


class FakeState:
    def __init__(self, sock):
        self.data, self.sock = {"knobs": []}, sock

    def add(self, key, *items):
        assert self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) < 4_000_000, \
            "recorded after the write"
        self.data[key].extend(items)


@pytest.fixture
def own_socket(monkeypatch):
    """A UDP socket of this process standing in for OVS's (SO_SNDBUFFORCE needs root)."""
    if os.geteuid() != 0:
        pytest.skip("SO_SNDBUFFORCE needs CAP_NET_ADMIN")
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    inode = os.fstat(sock.fileno()).st_ino
    monkeypatch.setattr(sendbuf, "_find", lambda: (os.getpid(), inode, sock.fileno()))
    monkeypatch.setattr(sendbuf, "_daemon", lambda: os.getpid())
    yield sock, inode
    sock.close()


def test_raised_recorded_first_and_put_back(own_socket):
    sock, inode = own_socket
    old = sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
    state = FakeState(sock)
    assert sendbuf.raise_to(state, 4_000_000) == 4_000_000
    assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == 4_000_000
    assert state.data["knobs"] == [f"{sendbuf.PREFIX}{os.getpid()}:{start_time(os.getpid())}:{inode}={old}"]
    assert teardown._knobs(state) == [f"Open vSwitch's send buffer back to {old} B"]
    assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == old


def test_never_lowered(own_socket):
    sock, _ = own_socket
    state = FakeState(sock)
    assert sendbuf.raise_to(state, 1024) is None and state.data["knobs"] == []


def test_only_the_recorded_daemon_and_socket_are_put_back(own_socket):
    sock, inode = own_socket
    sendbuf.raise_to(FakeState(sock), 4_000_000)
    me, start = os.getpid(), start_time(os.getpid())
    assert sendbuf.restore([f"{sendbuf.PREFIX}{me}:{start + 1}:{inode}=212992",   # a restarted daemon
                            f"{sendbuf.PREFIX}{me}:{start}:{inode + 1}=212992",   # another socket
                            f"{sendbuf.PREFIX}{me}:x:{inode}=1", "ovs-sndbuf:garbage", "/etc/passwd=0"]) == []
    assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == 4_000_000


def test_no_daemon_is_no_change(monkeypatch):
    monkeypatch.setattr(sendbuf, "_daemon", lambda: None)
    assert sendbuf.raise_to(FakeState(None), 4_000_000) is None


def test_asked_for_with_hpn_ovs_sndbuf_and_refused_in_one_line_otherwise(monkeypatch):
    from testbed.core.errors import ParamError
    from testbed.emulation.net import system
    monkeypatch.delenv("HPN_OVS_SNDBUF", raising=False)
    assert system.send_buffer() is False
    monkeypatch.setenv("HPN_OVS_SNDBUF", "1")
    assert system.send_buffer() is True
    monkeypatch.setenv("HPN_OVS_SNDBUF", "yes")
    with pytest.raises(ParamError, match="HPN_OVS_SNDBUF='yes'"):
        system.send_buffer()
