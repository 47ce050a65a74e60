"""A chain of k Open vSwitch bridges between two network namespaces, shaped as the testbed
shapes its cables, for benches that push frames through a known number of hops.

    with Chain(hops=3, mtu=1500, mbit=100, queue_bytes=48_000) as chain:
        chain.in_a("iperf3 -c ...")

a -- s1 -- s2 -- ... -- sk -- b: every cable a veth pair at `mtu`, its egress at both ends capped
at `mbit` over a byte-limited bfifo (testbed.emulation.net.shaping, the lines the fabric uses); each
bridge on this machine's datapath (system.datapath(): the userspace one where the kernel has no
OVS module) with two flows, port 1 <-> port 2, so a frame costs exactly what a fabric's
forwarding costs and no controller is involved. Names carry this process's PID, so the chain
never meets another run's interfaces; everything is removed on exit, whatever happened.
"""
from __future__ import annotations

import os

from testbed.core import sh
from testbed.emulation.net import netdevs, shaping, system

ADDR_A, ADDR_B = "10.77.0.1", "10.77.0.2"
MAC_A, MAC_B = "02:77:00:00:00:01", "02:77:00:00:00:02"


class Chain:
    """k bridges in a line between namespaces a and b (a context manager)."""

    def __init__(self, hops: int, mtu: int, mbit: float, queue_bytes: int, shape: str = "htb"):
        if hops < 1 or not 576 <= mtu <= 9000 or shape not in ("htb", "none"):
            raise ValueError("hops >= 1, 576 <= mtu <= 9000, shape htb|none")
        self.hops, self.mtu, self.mbit, self.queue_bytes, self.shape = hops, mtu, mbit, queue_bytes, shape
        self.tag = f"fc{os.getpid() % 100000}"
        self.ns = {"a": f"{self.tag}a", "b": f"{self.tag}b"}
        self.bridges = [f"{self.tag}s{i}" for i in range(1, hops + 1)]
        self.datapath = system.datapath()
        self._made = False

    # cable i joins node i and node i+1 (node 0 = a, nodes 1..k the bridges, node k+1 = b);
    # its end at node i is "<tag>l<i>x", at node i+1 "<tag>l<i>y"
    def _ends(self, i: int) -> tuple[str, str]:
        return f"{self.tag}l{i}x", f"{self.tag}l{i}y"

    def root_intfs(self) -> list[str]:
        return [self._ends(0)[1]] + [e for i in range(1, self.hops) for e in self._ends(i)] + \
               [self._ends(self.hops)[0]]

    def __enter__(self) -> Chain:
        self._made = True
        try:
            self._build()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _build(self) -> None:
        ip = []
        for name in self.ns.values():
            sh.run(["ip", "netns", "add", name])
        for i in range(self.hops + 1):
            x, y = self._ends(i)
            ip.append(f"link add {x} mtu {self.mtu} type veth peer name {y} mtu {self.mtu}")
        a_end, b_end = self._ends(0)[0], self._ends(self.hops)[1]
        ip += [f"link set {a_end} netns {self.ns['a']}", f"link set {b_end} netns {self.ns['b']}"]
        ip += [f"link set {n} up" for n in self.root_intfs()]
        sh.run("ip -batch -", input="\n".join(ip) + "\n")
        for side, end, addr, mac, peer, peer_mac in (("a", a_end, ADDR_A, MAC_A, ADDR_B, MAC_B),
                                                      ("b", b_end, ADDR_B, MAC_B, ADDR_A, MAC_A)):
            self.in_ns(side, f"ip link set {end} address {mac} && ip link set lo up && "
                             f"ip link set {end} up && ip addr add {addr}/24 dev {end} && "
                             f"ip neigh replace {peer} lladdr {peer_mac} dev {end} nud permanent && "
                             f"ethtool -K {end} tx off >/dev/null")
        self._bridges()
        if self.shape == "htb":
            self._shaping(a_end, b_end)

    def _bridges(self) -> None:
        args = []
        for i, br in enumerate(self.bridges, start=1):
            west, east = self._ends(i - 1)[1], self._ends(i)[0]
            args += ["--", "add-br", br, "--", "set", "bridge", br, f"datapath_type={self.datapath}",
                     "fail-mode=secure", f"external-ids:{netdevs.OVS_TAG}={self.tag}",
                     "--", "add-port", br, west, "--", "set", "interface", west, "ofport_request=1",
                     "--", "add-port", br, east, "--", "set", "interface", east, "ofport_request=2"]
        sh.run(["ovs-vsctl", "--timeout=30"] + args)
        for br in self.bridges:
            sh.run(["ovs-ofctl", "add-flows", br, "-"],
                   input="in_port=1,actions=output:2\nin_port=2,actions=output:1\n")

    def _shaping(self, a_end: str, b_end: str) -> None:
        lines = lambda intf: shaping.shaping_lines(intf, self.mbit, self.queue_bytes)  # noqa: E731
        sh.run("tc -batch -", input="".join(f"{line}\n" for n in self.root_intfs() for line in lines(n)))
        self.in_ns("a", "tc -batch - <<'EOF'\n" + "\n".join(lines(a_end)) + "\nEOF")
        self.in_ns("b", "tc -batch - <<'EOF'\n" + "\n".join(lines(b_end)) + "\nEOF")

    def in_ns(self, side: str, script: str, timeout: float = 120) -> str:
        """Run a shell script in namespace a or b and return its output."""
        return sh.run(["ip", "netns", "exec", self.ns[side], "bash", "-ec", script], timeout=timeout)

    def popen_ns(self, side: str, argv: list[str]):
        import subprocess
        return subprocess.Popen(["ip", "netns", "exec", self.ns[side], *argv],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def __exit__(self, *exc) -> None:
        if not self._made:
            return
        self._made = False
        netdevs.delete_bridges(set(self.bridges) & netdevs.tagged_bridges(self.tag), 2 * self.hops)
        netdevs.delete_links(self.root_intfs())
        for name in self.ns.values():
            sh.run(["ip", "netns", "del", name], check=False)
