"""Open vSwitch's snoop listeners on a running fabric (testbed/emulation/snoop.py): on the
userspace datapath every bridge's BRIDGE.snoop is held off while the fabric is up (OVS listens
on its .mgmt, which every ovs-ofctl read needs, and not there), and the holds are gone once it
is down; on the kernel datapath OVS keeps both listeners."""
from pathlib import Path

import pytest

from testbed.emulation import snoop, system
from testbed.emulation.build import Emulation, Options
from testbed.model import make_fabric

pytestmark = pytest.mark.integration


def test_snoop_listeners_held_while_up_and_released():
    rundir = system.ovs_rundir()
    with Emulation(make_fabric("mpft", {"scale": 0.01}), Options()) as emu:
        bridges = sorted(emu.fabric.switches)
        listening = system.unix_listeners()
        assert all(f"{rundir}/{b}.mgmt" in listening for b in bridges)
        assert emu.ofctl("dump-flows", bridges[0])          # ovs-ofctl still gets in
        held = [k for k in emu.state.data["knobs"] if k.startswith(snoop.PREFIX)]
        if emu.datapath == "system":
            assert held == [] and all(f"{rundir}/{b}.snoop" in listening for b in bridges)
            return
        assert sorted(held) == sorted(f"{snoop.PREFIX}{snoop.path(rundir, b)}" for b in bridges)
        assert not any(f"{rundir}/{b}.snoop" in listening for b in bridges)
        assert all(snoop.path(rundir, b).is_dir() for b in bridges)
    assert not any(Path(k[len(snoop.PREFIX):]).exists() for k in held)
