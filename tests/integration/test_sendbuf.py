"""Open vSwitch's send buffer on a running fabric (testbed/emulation/net/sendbuf.py), asked for: on
the userspace datapath raised to what the switch ports' queues hold while the fabric is up, and
back to what it was once it is down; left alone on the kernel datapath, and when not asked."""
from pathlib import Path

import pytest

from testbed.emulation.build import Emulation, Options
from testbed.emulation.net import sendbuf
from testbed.model import make_fabric

pytestmark = pytest.mark.integration


def test_the_send_buffer_holds_the_queues_while_up_and_is_put_back():
    with Emulation(make_fabric("mpft", {"scale": 0.01}), Options(send_buffer=True)) as emu:
        if emu.datapath == "system":
            assert emu.send_buffer is None
            return
        assert emu.send_buffer == sendbuf.wanted(len(emu.site.root_intfs()), emu.options.queue_bytes)
        assert sendbuf.current() == emu.send_buffer
        assert emu.describe()["ovs_send_buffer"] == emu.send_buffer
        [recorded] = [k for k in emu.state.data["knobs"] if k.startswith(sendbuf.PREFIX)]
    assert sendbuf.current() == int(recorded.rpartition("=")[2])


def test_left_alone_unless_asked(monkeypatch):
    monkeypatch.delenv("HPN_OVS_SNDBUF", raising=False)
    before = sendbuf.current()     # None on an Open vSwitch that has sent nothing yet
    kernels = int(Path("/proc/sys/net/core/wmem_default").read_text())
    with Emulation(make_fabric("mpft", {"scale": 0.01}), Options()) as emu:
        assert emu.send_buffer is None
        assert not [k for k in emu.state.data["knobs"] if k.startswith(sendbuf.PREFIX)]
        if emu.datapath == "netdev":   # the fabric's frames made the socket, if it was not there
            assert sendbuf.current() == (kernels if before is None else before)
