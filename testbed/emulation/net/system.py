"""What this machine offers, probed in throwaway network namespaces, and which path each part takes."""
from __future__ import annotations

import functools
import os
import re
import shutil

from testbed.core import sh
from testbed.emulation.net.hostnet import NIC_LINKS


def _probe_netns(script: str) -> bool:
    """Run `script` in a private network namespace that vanishes with it."""
    return shutil.which("unshare") is not None and sh.ok(["unshare", "-n", "sh", "-ec", script])


def _module(name: str) -> bool:
    sh.ok(["modprobe", "-q", name])        # loads it where the kernel allows; fails quietly here
    return os.path.isdir(f"/sys/module/{name}")


@functools.cache
def features() -> dict[str, bool]:
    return {
        "ovs_kernel_datapath": _module("openvswitch"),
        "bonding": _probe_netns("ip link add hpnb0 type bond mode balance-xor"),
        "netem": _probe_netns("ip link add d0 type veth peer name d1; "
                              "tc qdisc add dev d0 root netem delay 1ms"),
        "htb": _probe_netns("ip link add d0 type veth peer name d1; tc qdisc add dev d0 root handle 1: htb"),
        "tc_drop_action": _probe_netns(
            "ip link add d0 type veth peer name d1; tc qdisc add dev d0 clsact;"
            " tc filter add dev d0 egress matchall action drop"),
        "nft_egress_hook": shutil.which("nft") is not None and _probe_netns(
            "ip link add d0 type veth peer name d1; printf 'table netdev t { chain c { type filter hook "
            "egress device \"d0\" priority 0; }; }' | nft -f -"),
        "multipath_routes": os.path.exists("/proc/sys/net/ipv4/fib_multipath_hash_policy"),
        # a link of its own for a dual-ported NIC's address on the multipath fallback (hostnet.py)
        **{f"{kind}_link": _probe_netns(f"ip link add d0 type {kind}") for kind in NIC_LINKS},
    }


def datapath() -> str:
    """OVS datapath for our bridges: 'system' (kernel) where the module exists, else 'netdev'."""
    forced = os.environ.get("HPN_DATAPATH")
    if forced:
        return forced
    return "system" if features()["ovs_kernel_datapath"] else "netdev"


def bond_backend() -> str:
    """How a dual-ported NIC is bonded: Linux bonding, or L3 multipath with the same behaviour."""
    forced = os.environ.get("HPN_BOND")
    if forced:
        return forced
    return "bonding" if features()["bonding"] else "multipath"


def nic_link() -> str | None:
    """The link type that holds a dual-ported NIC's address on the multipath fallback: the first
    of hostnet.NIC_LINKS this kernel makes (None: neither, and the fallback cannot run here)."""
    return next((kind for kind in NIC_LINKS if features()[f"{kind}_link"]), None)


MTU_RANGE = (576, 9000)   # IPv4's minimum to a jumbo frame (what the userspace datapath receives)
DEFAULT_MTU = 1500        # bytes; docs/internals.md ("The MTU") says why


def mtu(default: int = DEFAULT_MTU) -> int:
    """Every cable's and host port's MTU: `default` unless HPN_MTU says otherwise
    (bench/framecost.py measures what it costs; docs/internals.md says why it is what it is)."""
    forced = os.environ.get("HPN_MTU")
    if not forced:
        return default
    if not forced.isdigit():
        from testbed.core.errors import ParamError
        raise ParamError(f"HPN_MTU={forced!r}: a number of bytes, {MTU_RANGE[0]}..{MTU_RANGE[1]}")
    return int(forced)


def send_buffer() -> bool:
    """Whether runs raise Open vSwitch's send buffer (sendbuf.py): HPN_OVS_SNDBUF=1; off unless
    set (docs/internals.md, "The MTU", says why it is not the default)."""
    forced = os.environ.get("HPN_OVS_SNDBUF", "0")
    if forced not in ("0", "1"):
        from testbed.core.errors import ParamError
        raise ParamError(f"HPN_OVS_SNDBUF={forced!r}: 1 (raise Open vSwitch's send buffer) or 0")
    return forced == "1"


def check_settings() -> None:
    """HPN_MTU and HPN_OVS_SNDBUF, each refused in one line (ParamError) before anything exists."""
    check_mtu(mtu())
    send_buffer()


def check_mtu(value: int) -> None:
    """ParamError (one line) unless `value` is an MTU every part of the fabric can carry."""
    from testbed.core.errors import ParamError
    if not MTU_RANGE[0] <= value <= MTU_RANGE[1]:
        raise ParamError(f"mtu={value}: choose {MTU_RANGE[0]}..{MTU_RANGE[1]} bytes (HPN_MTU)")


def one_way_fault_backend() -> str:
    if features()["nft_egress_hook"]:
        return "nft-egress"
    if features()["tc_drop_action"]:
        return "tc-drop"
    return "none"


def versions() -> dict[str, str | None]:
    def first(cmd, pattern):
        try:
            m = re.search(pattern, sh.run(cmd, check=False, timeout=10))
            return m.group(1) if m else None
        except (OSError, sh.subprocess.TimeoutExpired):
            return None
    out = {"kernel": os.uname().release,
           "ovs": first(["ovs-vsctl", "--version"], r"(\d+\.\d+\.\d+)"),
           "iperf3": first(["iperf3", "--version"], r"iperf (\d+\.\d+)")}
    for mod, dist in (("mininet", "mininet"), ("os_ken", "os-ken"), ("scapy", "scapy"),
                      ("pyroute2", "pyroute2")):
        try:
            from importlib.metadata import version
            out[mod] = version(dist)
        except Exception:
            out[mod] = None
    return out


def ovs_running() -> bool:
    return sh.ok(["ovs-vsctl", "--timeout=3", "show"], timeout=5)


@functools.cache
def ovs_rundir() -> str:
    """Open vSwitch's run directory, as ovs-vswitchd spells it (the only place it accepts a
    `unix:` controller target): taken from ovs-vsctl's default database socket."""
    m = re.search(r'"unix:(\S+)/db\.sock"', sh.run(["ovs-vsctl", "--help"], check=False))
    return m.group(1) if m else "/var/run/openvswitch"


def check_machine(datapath: str, bond: str) -> None:
    """ParamError (one line) unless this machine can run a fabric with `datapath` and `bond`:
    Open vSwitch answers, and a path forced with HPN_DATAPATH / HPN_BOND exists in this kernel."""
    from testbed.core.errors import ParamError
    if datapath not in ("system", "netdev"):
        raise ParamError(f"datapath={datapath!r} (HPN_DATAPATH): choose system or netdev")
    if bond not in ("bonding", "multipath"):
        raise ParamError(f"bond={bond!r} (HPN_BOND): choose bonding or multipath")
    if not ovs_running():
        raise ParamError("Open vSwitch is not running: start it with "
                         "/usr/share/openvswitch/scripts/ovs-ctl start (or `make setup`)")
    if datapath == "system" and not features()["ovs_kernel_datapath"]:
        raise ParamError("HPN_DATAPATH=system: this kernel has no openvswitch module (its datapath); "
                         "use netdev or leave HPN_DATAPATH unset (`hpn-testbed doctor`)")
    if bond == "bonding" and not features()["bonding"]:
        raise ParamError("HPN_BOND=bonding: this kernel has no bonding driver; use multipath or "
                         "leave HPN_BOND unset (`hpn-testbed doctor`)")
    if bond == "multipath" and nic_link() is None:
        raise ParamError(f"bond=multipath: this kernel makes no {' or '.join(NIC_LINKS)} link to hold "
                         "a dual-ported NIC's address (`hpn-testbed doctor`)")
