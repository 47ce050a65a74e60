"""The unit tests' guard (conftest.py): a program that acts on Open vSwitch or the kernel's
network does not start inside a unit test, however it is spelled; other programs do."""
import subprocess
import sys

import pytest

from .conftest import MachineTouched, machine_tool


@pytest.mark.parametrize("args,tool", [
    (["ovs-vsctl", "--if-exists", "del-br", "c0"], "ovs-vsctl"),
    (["/usr/bin/ovs-ofctl", "dump-flows", "c0"], "ovs-ofctl"),
    ("ip -force -batch - 2>/dev/null || true", "ip"),
    (["bash", "-c", "set -e\nethtool -K p0-eth1 tx off"], "ethtool"),
    ("cd /tmp && exec tc qdisc show", "tc"),
    (["sh", "-c", "true; nft delete table netdev x"], "nft"),
    (["ovs-vsctl", "--version"], None),          # a version or usage asks nothing of the machine
    ([sys.executable, "-c", "print('ip link')"], None),
    (["grep", "ip", "/dev/null"], None),
    ("echo tc", None),
])
def test_what_counts_as_acting_on_the_network(args, tool):
    assert machine_tool(args) == tool


def test_such_a_program_never_starts():
    with pytest.raises(MachineTouched, match="ovs-vsctl"):
        subprocess.run(["ovs-vsctl", "list-br"], capture_output=True)
    assert subprocess.run([sys.executable, "-c", "pass"]).returncode == 0
