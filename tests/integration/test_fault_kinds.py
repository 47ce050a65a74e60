"""A fault kind defined here, registered with one call, injected and repaired on a real fabric
through the registry, as the CLI's `fault` command and an experiment file would (the same
`read`, then `inject`, then the handle's `repair`)."""
import pytest

from testbed.core.wait import wait_for
from testbed.emulation.faults import registry as fault_registry
from testbed.emulation.faults.inject import Faults
from testbed.emulation.faults.kinds import PORT, Arg, FaultKind

pytestmark = [pytest.mark.integration, pytest.mark.hpn_fabric("hpn")]   # the plugin's fixtures


class NicDown(FaultKind):
    """Every port of one NIC down: on dual-ToR HPN, both of a NIC's cables."""
    name, help = "nic-ports-down", "every cable of the NIC a port belongs to down"
    args = (Arg("port", PORT, "a port of the NIC, e.g. p0s0h0-n0p0", positional=True),)

    def inject(self, faults, port):
        fab = faults.emu.fabric
        nic = next(n for n in fab.nics() if port in n.ports)
        return faults.combined(f"{nic.name} down", [faults.link_down(fab.host_link(p)) for p in nic.ports])


def carrier(emu, host: str, intf: str) -> bool:
    return emu.net[host].cmd(f"cat /sys/class/net/{intf}/carrier").strip() == "1"


def test_a_registered_kind_injects_and_repairs_on_a_real_fabric(hpn_fabric_module):
    emu = hpn_fabric_module
    kind = fault_registry.register(NicDown())
    try:
        nic = emu.fabric.hosts["p0s0h0"].nics[0]
        args = fault_registry.get(kind.name).read({"port": nic.ports[0]}, emu.fabric)
        with Faults(emu) as faults:
            handle = kind.inject(faults, **args)
            assert [h.note for h in faults.in_place] == [f"{nic.name} down"]
            wait_for("the NIC's ports to lose carrier",
                     lambda: not any(carrier(emu, nic.host, p) for p in nic.ports), 10)
            handle.repair()
            assert not faults.in_place
            wait_for("the NIC's ports to be back",
                     lambda: all(carrier(emu, nic.host, p) for p in nic.ports), 10)
    finally:
        fault_registry.unregister(kind.name)
