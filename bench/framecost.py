"""What one frame costs the emulator: paced UDP through a chain of k shaped OVS hops.

    sudo .venv/bin/python bench/framecost.py [--hops 3] [--rates 20 50 100 200 400]
        [--settings mtu=1500 mtu=4096 mtu=9000] [--seconds 3]

For each emulated link rate and each setting (interleaved, so drift on a shared machine hits
all alike), a fresh chain (bench/chain.py: two namespaces, k bridges on this machine's datapath,
every cable shaped as the fabric shapes it) carries iperf3 UDP at 90% of the link rate in
MTU-sized datagrams. Measured over the run: the frames delivered, Open vSwitch's CPU seconds
(ovs-vswitchd's own, unaffected by neighbours) plus the machine's softirq time (the veths' and
qdiscs' work), less what the same chain costs with no traffic in the second before (OVS's own
loops), and the machine's CPU busy fraction, the figure the scenarios' validity check
reads (testbed/measure/validity.py). Reported per setting:
- CPU seconds per million frame-hops (a frame crossing one switch);
- CPU per emulated Mbit/s: ms of CPU per second per Mbit/s carried per hop;
- per frame-hop, the descriptors ovs-vswitchd polled and the blocks it allocated (its own
  coverage counters: see ovs_counts; compare --hops 3 with --hops 9);
- the most frame-hops/s (and emulated Mbit/s x hops) carried with the CPU check passing
  (busy <= the scenarios' limit) and under 1% loss.
Then each setting's ratio to the first, measured in the same run (default: 1500 bytes, the MTU
of main before issue 27, selectable with HPN_MTU=1500), and issue 27's figure: each MTU's CPU
per emulated Mbit/s over 1500's (done when <= 0.5 for the fabric's default MTU).

A setting is `key=value[,key=value]`: mtu (bytes on every link and host), queue (bfifo bytes),
shape (htb: the fabric's shaping; none: no qdisc, to see what shaping itself costs).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from chain import ADDR_B, Chain

from testbed.core.wait import wait_for
from testbed.emulation.build import QUEUE_BYTES
from testbed.emulation.net.system import DEFAULT_MTU
from testbed.measure import validity
from testbed.measure.meters import cpu_times
from testbed.measure.validity import BUSY_LIMIT

TODAY = {"mtu": 1500, "queue": QUEUE_BYTES, "shape": "htb"}   # main before issue 27
GOAL = 0.5             # issue 27: the default MTU's CPU per emulated Mbit/s, at most half of 1500's
OFFERED = 0.9          # of the link rate: the shaper is not what drops
MAX_LOSS = 0.01
IDLE_S = 1.0           # s of no traffic before each run: the CPU the chain costs anyway
COUNTS_SETTLE_S = 1.5  # s for OVS to fold its threads' coverage counts into the totals


def parse_setting(text: str) -> dict:
    out = dict(TODAY)
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or key not in TODAY:
            raise ValueError(f"setting {text!r}: keys are {', '.join(TODAY)}")
        out[key] = value if key == "shape" else int(value)
    return out


def label(setting: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in setting.items() if v != TODAY[k]) or "today"


def ovs_jiffies() -> int:
    pid = Path("/var/run/openvswitch/ovs-vswitchd.pid").read_text().strip()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])        # utime + stime, all threads


def ovs_counts() -> tuple[int, int]:
    """ovs-vswitchd's coverage counters (poll_create_node, util_xalloc): the file descriptors its
    loops registered to wait on, and the blocks it allocated. Per frame-hop they show where a
    frame's cost goes on the userspace datapath: every iteration of the main loop, whatever woke
    it, polls every port of every bridge (one recvmmsg each, with a burst of packet buffers
    allocated and freed) and tries two accept()s per bridge (its .mgmt and .snoop sockets), so a
    frame's cost is mostly the iteration it wakes, and that grows with the fabric. OVS folds the
    counters into these totals about once a second (COUNTS_SETTLE_S)."""
    def read(name: str) -> int:
        out = subprocess.run(["ovs-appctl", "coverage/read-counter", name], capture_output=True,
                             text=True, timeout=10).stdout
        return int(out.strip() or 0)
    return read("poll_create_node"), read("util_xalloc")


def softirq_jiffies() -> int:
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    return int(fields[5]) + int(fields[6])          # irq + softirq


def snapshot() -> tuple[float, int, int, tuple[int, int]]:
    return time.monotonic(), ovs_jiffies(), softirq_jiffies(), cpu_times()


def idle_cores(seconds: float, hz: int) -> float:
    """The same CPU with the chain up and no traffic (OVS's own loops, timers): subtracted, so
    that the cost is what frames add."""
    t0, ovs0, irq0, _ = snapshot()
    time.sleep(seconds)
    t1, ovs1, irq1, _ = snapshot()
    return (ovs1 - ovs0 + irq1 - irq0) / hz / (t1 - t0)


def iperf_server(chain: Chain):
    server = chain.popen_ns("b", ["iperf3", "-s", "-1", "-B", ADDR_B])
    wait_for("iperf3 to listen", lambda: ":5201" in chain.in_ns("b", "ss -ltnH"), 10, 0.05)
    return server


def point(chain: Chain, seconds: float) -> dict:
    """One paced UDP run through `chain`: what it delivered and what it cost."""
    import os
    hz = os.sysconf("SC_CLK_TCK")
    server = iperf_server(chain)
    rate = chain.mbit * OFFERED
    try:
        idle = idle_cores(IDLE_S, hz)
        t0, ovs0, irq0, (tot0, idle0) = snapshot()
        polls0, allocs0 = ovs_counts()
        out = chain.in_ns("a", f"iperf3 -c {ADDR_B} -u -b {rate:.3f}M -l {chain.mtu - 28} "
                               f"-t {seconds} -J", timeout=seconds + 30)
        t1, ovs1, irq1, (tot1, idle1) = snapshot()
        time.sleep(COUNTS_SETTLE_S)
        polls1, allocs1 = ovs_counts()
    finally:
        server.kill()
        server.wait()
    end = json.loads(out)["end"]["sum"]
    frames = end["packets"] - end["lost_packets"]
    wall = t1 - t0
    cpu = max(0.0, (ovs1 - ovs0 + irq1 - irq0) / hz - idle * wall)   # what the frames added
    fh = frames * chain.hops
    mbit = frames * (chain.mtu + 14) * 8 / 1e6 / seconds
    busy = 1 - (idle1 - idle0) / max(tot1 - tot0, 1)
    loss = end["lost_packets"] / max(end["packets"], 1)
    return {"link_mbit": chain.mbit, "mbit": mbit, "frame_hops_s": fh / seconds, "cpu_cores": cpu / wall,
            "s_per_mfh": cpu / fh * 1e6 if fh else float("inf"),
            "ms_per_mbit_hop": cpu / wall * 1e3 / (mbit * chain.hops) if mbit else float("inf"),
            "polls_per_fh": (polls1 - polls0) / fh if fh else float("inf"),
            "allocs_per_fh": (allocs1 - allocs0) / fh if fh else float("inf"),
            "idle_cores": idle, "busy": busy, "loss": loss,
            "valid": validity.cpu(busy).valid and loss <= MAX_LOSS}


def summary(points: list[dict]) -> dict:
    ok = [p for p in points if p["valid"]] or points
    best = max((p for p in points if p["valid"]), key=lambda p: p["frame_hops_s"], default=None)
    return {"s_per_mfh": statistics.median(p["s_per_mfh"] for p in ok),
            "ms_per_mbit_hop": statistics.median(p["ms_per_mbit_hop"] for p in ok),
            "max_fh_s": best["frame_hops_s"] if best else 0.0,
            "max_mbit_hops": best["mbit"] * best["hops"] if best else 0.0}


def show(name: str, p: dict) -> None:
    print(f"  {name:<22} link {p['link_mbit']:>6.0f} Mbit/s  carried {p['mbit']:>7.1f}  "
          f"{p['frame_hops_s']:>9.0f} frame-hops/s  CPU {p['cpu_cores']:.2f} cores "
          f"(+{p['idle_cores']:.2f} idle)  "
          f"{p['s_per_mfh']:6.2f} s/M frame-hops  {p['ms_per_mbit_hop']:6.3f} ms/s per Mbit/s-hop  "
          f"per frame-hop OVS polled {p['polls_per_fh']:5.1f} fds, allocated {p['allocs_per_fh']:5.0f}  "
          f"busy {p['busy']:.0%}  loss {p['loss']:.1%}  {'ok' if p['valid'] else 'INVALID'}")


def compared(name: str, s: dict, base: dict) -> str:
    ratio = lambda key: f" ({s[key] / base[key]:.2f}x)" if base[key] else ""   # noqa: E731
    return (f"{name:<24} {s['s_per_mfh']:6.2f} s/M frame-hops{ratio('s_per_mfh')}  "
            f"{s['ms_per_mbit_hop']:.3f} ms/s per Mbit/s-hop{ratio('ms_per_mbit_hop')}  "
            f"max valid {s['max_fh_s']:.0f} frame-hops/s{ratio('max_fh_s')}, "
            f"{s['max_mbit_hops']:.0f} Mbit/s x hops{ratio('max_mbit_hops')}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hops", type=int, default=3)
    ap.add_argument("--rates", type=float, nargs="+", default=[20, 50, 100, 200, 400])
    ap.add_argument("--settings", nargs="+", default=["mtu=1500", "mtu=4096", "mtu=9000"])
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    try:
        settings = [parse_setting(s) for s in args.settings]
    except ValueError as e:
        print(f"framecost: {e}", file=sys.stderr)
        sys.exit(2)
    names = [label(s) for s in settings]
    runs: dict[str, list[dict]] = {n: [] for n in names}
    print(f"{args.hops} hops, {args.seconds:.0f} s per run, UDP at {OFFERED:.0%} of the link rate")
    for mbit in args.rates:
        for name, s in zip(names, settings):
            with Chain(args.hops, s["mtu"], mbit, s["queue"], s["shape"]) as chain:
                p = point(chain, args.seconds)
            p["hops"] = args.hops
            runs[name].append(p)
            show(name, p)
    sums = {n: summary(ps) for n, ps in runs.items()}
    base = sums[names[0]]
    print(f"datapath {chain.datapath}; CPU = ovs-vswitchd + softirq; valid: busy <= {BUSY_LIMIT:.0%}, "
          f"loss <= {MAX_LOSS:.0%} (machine busy includes neighbours)")
    for n in names:
        print(compared(n, sums[n], base))
    print(goal_line(names, settings, sums))


def goal_line(names: list[str], settings: list[dict], sums: dict) -> str:
    """Issue 27's figure, this run: each MTU's CPU per emulated Mbit/s-hop over 1500's (the
    other settings as today's), against the goal of at most half; the fabric's default named."""
    by_mtu = {s["mtu"]: sums[n] for n, s in zip(names, settings)
              if s["queue"] == TODAY["queue"] and s["shape"] == TODAY["shape"]}
    base = by_mtu.get(TODAY["mtu"])
    if not base or len(by_mtu) < 2:
        return "issue 27's figure needs mtu=1500 and another MTU at today's queue and shaping"
    ratios = [(m, by_mtu[m]["ms_per_mbit_hop"] / base["ms_per_mbit_hop"])
              for m in sorted(by_mtu) if m != TODAY["mtu"]]
    shown = ", ".join(f"mtu={m}{' (the default)' if m == DEFAULT_MTU else ''} {r:.2f}x "
                      f"({'met' if r <= GOAL else 'not met'})" for m, r in ratios)
    return (f"CPU per emulated Mbit/s-hop against mtu=1500 in this run (issue 27: <= {GOAL:.2f}x): "
            f"{shown}; the fabric's default MTU is {DEFAULT_MTU}")


if __name__ == "__main__":
    main()
