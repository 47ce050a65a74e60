"""Host-side networking, as shell scripts computed from the model (pure, so unit-testable).

Every NIC has one IP (/32) and one MAC and routes through the virtual gateway, for which every
switch answers ARP (a rule the controller installs). A host with several NICs uses one routing table
per NIC, chosen by source address, so traffic from NIC i leaves on NIC i. A dual-ported NIC is
bonded:
- `bonding`: Linux bonding, balance-xor with a layer3+4 hash and miimon, where the kernel has it;
- `multipath`: the fallback with the same behaviour: both ports carry the NIC's MAC, the NIC's
  route is an L4-hashed multipath route over both ports, and a nexthop whose port loses carrier
  is skipped (ignore_routes_with_linkdown).
Either way the NIC's address sits on an interface named after the NIC (`nic_device`), as on a
real host, so programs that pick NICs by interface name (GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME,
Open MPI's btl_tcp_if_include) find it: its bond, or on the fallback a link of its own that
carries no traffic (`NIC_LINKS`: a `dummy`, or an `ifb` where the kernel has no dummy driver).
The weak-host model routes by source address, not by the device holding it, so a packet from
the NIC's address still leaves by the NIC's table over its ports.
"""
from __future__ import annotations

from testbed.model.fabric import GATEWAY_IP, Host, Nic

BOND_MIIMON_MS = 10   # carrier polling of the bonding driver: bounds its failover gap
TABLE_BASE = 100
IW_SEGMENTS, IW_MTU = 10, 1500    # Linux's initial window (RFC 6928), at the MTU the tour was set at
TCP_OVERHEAD = 52                 # IPv4 + TCP headers with timestamps: MSS = MTU - 52


def initial_window(mtu: int) -> int | None:
    """The initial congestion window (segments) for the hosts' routes at `mtu`: as many bytes as
    Linux's 10 segments at 1500 (14.5 KB), so a new connection's first flight is the same size
    whatever the frame; None at 1500 (the kernel's own). At 4096 Linux's 10 segments are 40 KB,
    most of a 48 KB queue: core-pipeline's short paced transfers then lost time in slow start
    (docs/internals.md, "The MTU")."""
    iw = max(2, round(IW_SEGMENTS * (IW_MTU - TCP_OVERHEAD) / (mtu - TCP_OVERHEAD)))
    return None if iw == IW_SEGMENTS else iw


def table(nic: Nic) -> int:
    return TABLE_BASE + nic.index


# Link types that can hold a dual-ported NIC's address on the multipath fallback, in the order
# tried (system.nic_link picks the first this kernel has): neither sends anything anywhere.
NIC_LINKS = ("dummy", "ifb")


def bond_name(nic: Nic) -> str:
    """A dual-ported NIC's own interface (its bond, or its link on the multipath fallback): the
    NIC's name, `HOST-nI`, two characters shorter than its ports' (`HOST-nIpK`), so it fits
    wherever they do (IFNAMSIZ)."""
    return nic.name


def nic_device(nic: Nic) -> str:
    """The interface that holds the NIC's address, as on a real host: a single-ported NIC's port,
    a dual-ported NIC's own interface (`bond_name`) on either backend."""
    return nic.ports[0] if len(nic.ports) == 1 else bond_name(nic)


def _route_device(nic: Nic, backend: str) -> str | None:
    """The one device the NIC's routes send on, or None: the multipath route over its ports."""
    return nic_device(nic) if len(nic.ports) == 1 or backend == "bonding" else None


def _nexthops(nic: Nic, backend: str, bare: bool = False) -> str:
    via = "" if bare else f"via {GATEWAY_IP} "
    onlink = "" if bare else " onlink"
    dev = _route_device(nic, backend)
    if dev:
        return f"{via}dev {dev}{onlink}"
    return " ".join(f"nexthop {via}dev {p}{onlink}" for p in nic.ports)


def _sysctl(key: str, value: int) -> str:
    """A sysctl written by the shell itself (a builtin: no process; /proc/sys/net is the
    namespace's own)."""
    return f"echo {value} > /proc/sys/{key.replace('.', '/')}"


def _route_options(mtu: int) -> str:
    """Options of every route a host sends by (after `src IP`): the initial window at `mtu`."""
    iw = initial_window(mtu)
    return f" initcwnd {iw}" if iw else ""


def _nic_lines(nic: Nic, backend: str, bare: bool, mtu: int, nic_link: str) -> list[str]:
    """`ip -batch` lines giving `nic` its ports' MAC, its bond (or its `nic_link` on the
    multipath fallback), address, table and rule."""
    lines = []
    for port in nic.ports:   # every port of a NIC carries the NIC's one MAC
        lines += [f"link set dev {port} down", f"link set dev {port} address {nic.mac}"]
    if len(nic.ports) > 1 and backend == "bonding":
        bond = bond_name(nic)
        lines.append(f"link add {bond} address {nic.mac} mtu {mtu} type bond mode balance-xor "
                     f"xmit_hash_policy layer3+4 miimon {BOND_MIIMON_MS}")
        lines += [f"link set dev {port} master {bond}" for port in nic.ports]
        lines.append(f"link set dev {bond} up")
    elif len(nic.ports) > 1:
        lines += [f"link add {bond_name(nic)} address {nic.mac} mtu {mtu} type {nic_link}",
                  f"link set dev {bond_name(nic)} up"]
    lines += [f"link set dev {port} up" for port in nic.ports]
    lines.append(f"addr add {nic.ip}/32 dev {nic_device(nic)}")
    lines.append(f"route add default table {table(nic)} src {nic.ip}{_route_options(mtu)} "
                 f"{_nexthops(nic, backend, bare)}")
    lines.append(f"rule add from {nic.ip} table {table(nic)} pref {table(nic)}")
    return lines


def host_script(host: Host, backend: str, datapath: str, bare: bool = False, mtu: int = 1500,
                tc_lines: list[str] = (), nic_link: str = NIC_LINKS[0]) -> str:
    """Shell commands that configure `host` (run inside its namespace), then shape its ports
    (`tc_lines`, shaping.py). `bare` (a user's controller app instead of ours): no gateway;
    every destination is on-link, so a NIC ARPs for its peer itself and plain L2 forwarding (a
    learning switch) carries the traffic. Its ports were made at `mtu` (links.py); a bond gets
    it too (enslaving sets a port to its bond's), and its routes the initial window that sends
    what 10 segments send at 1500 (`initial_window`). `nic_link`: the link type (NIC_LINKS) that
    holds a dual-ported NIC's address on the multipath fallback.

    A segment configures 136 hosts at once on 2 cores: the sysctls are the shell's own writes,
    every link, address, route and rule one `ip -batch` and the shaping one `tc -batch`, so a
    host costs a few processes (and ethtool per port on the userspace datapath), not ~150."""
    keys = ["net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6"]
    zero = ["net.ipv4.conf.all.rp_filter", "net.ipv4.conf.default.rp_filter"]
    # L4 hash for multipath routes; skip nexthops whose port has no carrier
    keys += ["net.ipv4.fib_multipath_hash_policy", "net.ipv4.conf.all.ignore_routes_with_linkdown"]
    # a flow's fixed client ports (hashports.cport_base) used again towards the same peer within
    # a run: connect() may take over their TIME_WAIT instead of failing with EADDRINUSE
    keys += ["net.ipv4.tcp_tw_reuse"]
    ports = [port for nic in host.nics for port in nic.ports]
    owns = [bond_name(n) for n in host.nics if len(n.ports) > 1]   # bonds, or the fallback's links
    lines = [_sysctl(k, 1) for k in keys] + [_sysctl(k, 0) for k in zero]
    lines += [_sysctl(f"net.ipv4.conf.{port}.rp_filter", 0) for port in ports]
    if datapath == "netdev":
        # the userspace datapath forwards partial checksums as they are: compute them here
        lines += [f"ethtool -K {port} tx off >/dev/null" for port in ports]
    batch = ["link set dev lo up"] + [line for nic in host.nics
                                      for line in _nic_lines(nic, backend, bare, mtu, nic_link)]
    batch.append(f"route add default src {host.nics[0].ip}{_route_options(mtu)} "
                 f"{_nexthops(host.nics[0], backend, bare)}")
    lines.append("ip -batch - <<'EOF'\n" + "\n".join(batch) + "\nEOF")
    lines += [_sysctl(f"net.ipv4.conf.{own}.rp_filter", 0) for own in owns]
    if tc_lines:
        lines.append("tc -batch - <<'EOF'\n" + "\n".join(tc_lines) + "\nEOF")
    return "\n".join(lines)


def garp_lines(host: Host, pid: int, ports=None) -> list[str]:
    """`PID PORT FRAME` lines (testbed.inhost.frames) announcing every port of every NIC
    (or only `ports`) with a gratuitous ARP."""
    from testbed.emulation.net.garp import garp_frame
    return [f"{pid} {port} {garp_frame(nic.ip, nic.mac).hex()}" for nic in host.nics
            for port in nic.ports if ports is None or port in ports]


def detector_specs(host: Host, backend: str) -> list[dict]:
    """What testbed.inhost.detector needs for each dual-ported NIC of `host` (single ports have no spare)."""
    return [{"ip": nic.ip, "mac": nic.mac, "table": table(nic), "main": nic is host.nics[0],
             "bond": bond_name(nic) if backend == "bonding" else None, "ports": list(nic.ports)}
            for nic in host.nics if len(nic.ports) > 1]


def layer34_slave(src_ip: str, dst_ip: str, sport: int, dport: int, slaves: list[str]) -> str:
    """The slave a Linux bond with `xmit_hash_policy layer3+4` (balance-xor) sends this TCP/UDP
    flow on, `slaves` being its usable slaves in enslavement order: the kernel's
    `__bond_xmit_hash` + `bond_ip_hash` (drivers/net/bonding/bond_main.c), then `hash % count`.
    `ip route get` names only the bond, so traces and port choices need this to know the port.
    The kernel reads the ports word and the addresses as little-endian u32 of network-order bytes."""
    def word(raw: bytes) -> int:
        return int.from_bytes(raw, "little")
    h = word(sport.to_bytes(2, "big") + dport.to_bytes(2, "big"))
    h ^= word(bytes(int(x) for x in dst_ip.split("."))) ^ word(bytes(int(x) for x in src_ip.split(".")))
    h ^= h >> 16
    h ^= h >> 8
    return slaves[(h >> 1) % len(slaves)]
