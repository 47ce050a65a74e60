"""`routes SWITCH` in the CLI: the controller's forwarding rules (table 1) and groups of a switch,
from ovs-ofctl's dumps, condensed to one short line each (pure text in, text out)."""
from __future__ import annotations

import re
from collections.abc import Callable

from testbed.model.contract import TABLE_FORWARD

STATS = {"cookie", "duration", "table", "n_packets", "n_bytes", "idle_age", "hard_age",
         "importance", "priority", "send_flow_rem", "reset_counts"}
GROUP_TYPES = {"ff": "fast-failover", "select": "select", "all": "all", "indirect": "indirect"}

PeerName = Callable[[int], "str | None"]   # OpenFlow port -> what is cabled to it


def condensed_actions(actions: str, peer: PeerName) -> str:
    """`set_field:..->eth_dst,output:3` -> `port 3 (p0a0n0-eth1)`: the routine rewrite of the
    Ethernet addresses is left out, ports are named by what they are cabled to."""
    words = []
    for action in actions.split(","):
        if not action or re.fullmatch(r"set_field:\S+->eth_(src|dst)", action):
            continue
        if m := re.fullmatch(r"output:(\d+)", action):
            name = peer(int(m.group(1)))
            words.append(f"port {m.group(1)}" + (f" ({name})" if name else ""))
        elif m := re.fullmatch(r"group:(\d+)", action):
            words.append(f"group {m.group(1)}")
        else:
            words.append(action)
    return ", ".join(words) or "drop"


def parse_flow(line: str) -> tuple[int, str, str, int] | None:
    """One dump-flows line -> (priority, match, actions, packets); None for a header line."""
    head, sep, actions = line.strip().partition(" actions=")
    if not sep:
        return None
    fields = [f.strip() for f in head.split(",") if f.strip()]
    values = dict(f.split("=", 1) for f in fields if "=" in f)
    match = [f for f in fields if f.split("=", 1)[0] not in STATS and f != "ip"]
    return (int(values.get("priority", 32768)), " ".join(match) or "any", actions,
            int(values.get("n_packets", 0)))


def flow_lines(dump: str, peer: PeerName) -> list[str]:
    flows = [f for f in map(parse_flow, dump.splitlines()) if f]
    flows.sort(key=lambda f: -f[0])     # the order the switch matches them in
    width = max((len(m) for _, m, _, _ in flows), default=0)
    return [f"  {prio:>5}  {match:<{width}}  -> {condensed_actions(actions, peer)}  [{packets} packets]"
            for prio, match, actions, packets in flows]


def group_line(line: str, peer: PeerName) -> tuple[int, str] | None:
    """One dump-groups line -> (group id, `group 3 fast-failover: port 2 (...), else group 1`)."""
    head, *buckets = line.strip().split(",bucket=")
    gid, kind = re.search(r"group_id=(\d+)", head), re.search(r"type=(\w+)", head)
    if not gid or not kind:
        return None
    fields = re.search(r"fields\(([^)]*)\)", head)
    targets = [condensed_actions(b.partition("actions=")[2], peer) for b in buckets]
    name = GROUP_TYPES.get(kind.group(1), kind.group(1))
    joiner = ", else " if kind.group(1) == "ff" else " | "
    hashed = f" on {fields.group(1)}" if fields else ""
    return int(gid.group(1)), f"  group {gid.group(1)} {name}{hashed}: {joiner.join(targets) or 'drop'}"


def group_lines(dump: str, peer: PeerName) -> list[str]:
    groups = sorted(g for g in (group_line(line, peer) for line in dump.splitlines()) if g)
    return [text for _, text in groups]


def routes_text(switch: str, flows_dump: str, groups_dump: str, peer: PeerName) -> str:
    flows, groups = flow_lines(flows_dump, peer), group_lines(groups_dump, peer)
    title = (f"*** {switch}: {len(flows)} rules in table {TABLE_FORWARD} (priority, match -> actions; "
             f"MAC rewrites not shown), {len(groups)} groups")
    return "\n".join([title, *flows, *groups]) + "\n"
