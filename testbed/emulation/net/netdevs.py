"""This machine's Open vSwitch bridges and root-namespace interfaces, as a run sees them: which
exist, which carry a run's tag (external-ids:hpn-testbed=RUN), and their removal in batches
(one ovs-vsctl for all bridges, one kernel batch for all links)."""
from __future__ import annotations

import json
import os

from testbed.core import sh

OVS_TAG = "hpn-testbed"


def delete_bridges(bridges: set[str], ports: int) -> str:
    """One ovs-vsctl for all of them; OVS takes ~0.1 s a bridge and more with many ports.

    On the userspace datapath each bridge's own port is a tap device, and ovs-vswitchd closes
    them one by one, each waiting out the kernel's grace period: the taps go first, in one kernel
    batch (measured: bench/results/journal.md)."""
    if not bridges:
        return ""
    delete_links(bridge_taps(bridges))
    timeout = max(30, int(0.05 * ports) + 5 * len(bridges))
    sh.run(["ovs-vsctl", f"--timeout={timeout}"] + [a for b in sorted(bridges)
                                                     for a in ("--", "--if-exists", "del-br", b)],
           timeout=timeout + 10)
    return f"{len(bridges)} bridges"


def bridge_taps(bridges) -> list[str]:
    """Those of `bridges` whose own port is a tap device (the userspace datapath's)."""
    return sorted(b for b in bridges if os.path.exists(f"/sys/class/net/{b}/tun_flags"))


def delete_links(names: list[str]) -> int:
    """Delete these root-namespace interfaces (a veth goes with its peer) in one kernel batch.

    One `ip link del` per link waits out the kernel's RCU grace periods each time (~15 ms a
    link); the members of a link group go in one batch. The group is a number no interface
    carries yet, and only `names` are put in it, so nothing else can go with them.
    Returns how many of `names` existed."""
    existing = set(os.listdir("/sys/class/net"))
    names = [n for n in names if n in existing]
    if not names:
        return 0
    group = _unused_link_group()
    # -force: go on past names that vanish meanwhile (the peer of one deleted before)
    sh.run("ip -force -batch - 2>/dev/null || true", check=False,
           input="".join(f"link set dev {n} group {group}\n" for n in names))
    if _link_group(group) <= set(names):
        sh.run(["ip", "link", "del", "group", str(group)], check=False)
    # whatever is left (a foreign interface joined the group, or no group delete): one by one
    left = [n for n in names if os.path.exists(f"/sys/class/net/{n}")]
    if left:
        sh.run("ip -force -batch - 2>/dev/null || true", check=False,
               input="".join(f"link del {n}\n" for n in left))
    return len(names)


_GROUP_BASE = 0x48504E00   # "HPN": far from 0, the default group that holds every interface


def _link_group(group: int) -> set[str]:
    out = sh.run(["ip", "-j", "link", "show", "group", str(group)], check=False)
    # iproute2 prints an empty object per non-member interface
    return {link["ifname"] for link in json.loads(out or "[]") if "ifname" in link}


def _unused_link_group() -> int:
    for group in range(_GROUP_BASE + os.getpid() % 256, _GROUP_BASE + 512):
        if not _link_group(group):
            return group
    raise RuntimeError("no unused link group")


def tagged_bridges(run_id: str | None = None) -> set[str]:
    """Bridges carrying our OVS tag (for one run, or for any run)."""
    out = sh.run(["ovs-vsctl", "--timeout=10", "--format=csv", "--no-headings", "--columns=name,external_ids",
                  "list", "Bridge"], check=False)
    found = set()
    for line in out.splitlines():
        name, _, ids = line.partition(",")
        if f"{OVS_TAG}=" in ids and (run_id is None or f"{OVS_TAG}={run_id}" in ids.replace('"', "")):
            found.add(name.strip('"'))
    return found


def all_bridges() -> set[str]:
    return set(sh.run(["ovs-vsctl", "--timeout=10", "list-br"], check=False).split())
