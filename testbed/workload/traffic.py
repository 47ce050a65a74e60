"""Traffic on a running emulation: iperf3 flows with chosen 5-tuples, and pings.

Servers and clients are spawned by their hosts (FabricHost.spawn: recorded in the run state so
`clean` can end them), servers waited for by polling their listening sockets. Results come from
iperf3's own JSON, written to files in the run directory.
"""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from testbed.core import sh
from testbed.core.errors import TestbedError
from testbed.core.wait import wait_for
from testbed.emulation.build import Emulation
from testbed.model.fabric import Nic

IPERF_MARKER = "iperf3"


@dataclass(frozen=True)
class Flow:
    """An iperf3 flow from NIC `src` to NIC `dst` (fabric.nic("host-n0")): its server port,
    optionally a pinned client port (its 5-tuple, hence its hashed path), TCP or UDP, and
    `parallel` connections on consecutive source ports."""
    src: Nic
    dst: Nic
    dport: int = 5201
    sport: int | None = None      # pin the client port to choose the 5-tuple
    proto: str = "tcp"
    parallel: int = 1             # iperf3 -P: several connections, consecutive source ports


def start_server(emu: Emulation, nic: Nic, port: int, interval: float = 0.5):
    """An iperf3 server bound to `nic` on `port`, ready when this returns; its process.

    It reports every `interval` s in JSON, which a client's --get-server-output brings back."""
    node = emu.net[nic.host]
    proc = node.spawn(f"iperf3 -s -1 -J -i {interval} -B {nic.ip} -p {port}", IPERF_MARKER)

    def listening():
        if proc.poll() is not None:
            raise TestbedError(f"iperf3 server on {nic.ip}:{port} exited ({proc.returncode})")
        return f"{nic.ip}:{port} " in node.cmd(f"ss -Hltn sport = :{port}")
    wait_for(f"iperf3 server on {nic.ip}:{port}", listening, 10)
    return proc


def client_command(flow: Flow, seconds: float, rate_mbit: float | None = None, interval: float = 0.5,
                   server_output: bool = False, block: int | None = None) -> str:
    """`server_output`: add the receiver's JSON (what arrived, per interval) as
    "server_output_json", from which `received_mbps` can leave out a warm-up. (Not iperf3's `-O`:
    iperf3 3.18 accounts omitted seconds differently from 3.12, so totals built on it depend on
    the version installed.) `block`: bytes per write and read (`-l`); iperf3 3.18's receiver
    counts a TCP interval's bytes by whole 128 KB reads, which on a link of a few Mbit/s is a
    second's traffic, so a short test needs smaller blocks to be measured at all evenly."""
    cmd = (f"iperf3 -c {flow.dst.ip} -B {flow.src.ip} -p {flow.dport} -t {seconds} -J "
           f"-i {interval} -P {flow.parallel}")
    if flow.sport:
        cmd += f" --cport {flow.sport}"
    if server_output:
        cmd += " --get-server-output"
    if block:
        cmd += f" -l {block}"
    if flow.proto == "udp":
        cmd += " -u"
    if rate_mbit:
        cmd += f" -b {rate_mbit}M"
    return cmd




@dataclass
class Client:
    flow: Flow
    proc: object          # the iperf3 process (subprocess.Popen)
    out: Path             # its JSON, in the run directory


def start_client(emu: Emulation, flow: Flow, seconds: float, go: Path | None = None, **kw) -> Client:
    """Start a client writing its JSON to a file of the run; with `go`, its iperf3 starts only
    once that file exists (see start_together)."""
    out = emu.state.output("iperf3.json")
    command = client_command(flow, seconds, **kw)
    if go is not None:    # `exec`: the process recorded is iperf3 itself once it starts
        command = ["sh", "-c", f"until [ -e {shlex.quote(str(go))} ]; do sleep 0.01; done; exec {command}"]
    proc = emu.net[flow.src.host].spawn(command, IPERF_MARKER, out=out)
    return Client(flow, proc, out)


def start_together(emu: Emulation, flows: list[Flow], seconds: float, **kw) -> list[Client]:
    """Start every flow's client at one moment: each waits for one file, made once all are
    spawned. Clients started one after another (each spawn takes a while on a busy machine)
    would measure over windows that do not coincide: the first flow has the link to itself at
    the start, the last at the end, and their rates, each right over its own window, would add
    up beyond the link's rate."""
    go = emu.state.output("start")
    try:
        clients = [start_client(emu, flow, seconds, go=go, **kw) for flow in flows]
    except BaseException:
        go.touch()       # those already spawned do not wait for ever (the teardown ends them)
        raise
    go.touch()
    return clients


def wait_client(emu: Emulation, client: Client, timeout: float) -> dict:
    flow = client.flow
    wait_for(f"iperf3 client {flow.src.ip} -> {flow.dst.ip}",
             lambda: client.proc.poll() is not None, timeout, 0.1)
    text = client.out.read_text(errors="replace")
    emu.state.done_with(client.out)
    try:
        result = json.loads(text)
    except ValueError:
        raise TestbedError(
            f"iperf3 {flow.src.ip} -> {flow.dst.ip} gave no JSON:\n{text[-2000:]}") from None
    if "error" in result:
        raise TestbedError(f"iperf3 {flow.src.ip} -> {flow.dst.ip}: {result['error']}")
    return result


def received_mbps(result: dict, warm: float = 0.0) -> float:
    """Mbit/s that arrived. With the receiver's own intervals (a client started with
    `server_output=True`), from those that start `warm` s or more into the test (the steady
    state, not slow start): bytes over seconds, the same whatever iperf3's version. Otherwise
    iperf3's end totals (then `warm` must be 0)."""
    server = result.get("server_output_json")
    if server is None:
        if warm:
            raise ValueError("received_mbps(warm=...) needs the receiver's intervals (server_output=True)")
        end = result["end"]
        return (end.get("sum_received") or end.get("sum"))["bits_per_second"] / 1e6
    sums = [iv["sum"] for iv in server.get("intervals", []) if iv["sum"]["start"] >= warm - 1e-6]
    seconds = sum(s["seconds"] for s in sums)
    return sum(s["bytes"] for s in sums) * 8 / seconds / 1e6 if seconds > 0 else 0.0


def run_flows(emu: Emulation, flows: list[Flow], seconds: float, **kw) -> list[dict]:
    """Run `flows` concurrently for `seconds`, all started at one moment (start_together), so
    that their windows coincide and the rates of flows sharing a link add up to at most its
    rate; iperf3's JSON result for each."""
    for flow in flows:
        start_server(emu, flow.dst, flow.dport)
    clients = start_together(emu, flows, seconds, **kw)
    return [wait_client(emu, client, seconds + 15) for client in clients]


def ping_all(emu: Emulation, pairs: list[tuple[Nic, Nic]], count: int = 1) -> dict[tuple[str, str], bool]:
    """Ping every (src, dst) pair, each source host's pings in parallel; True where a reply came.

    The pings run in a script of their own (sh.node_cmd), so its `wait` waits for them and not
    for iperf3 clients running in the background of the host's shell."""
    by_host: dict[str, list[tuple[Nic, Nic]]] = {}
    for src, dst in pairs:
        by_host.setdefault(src.host, []).append((src, dst))
    result = {}
    for host, items in by_host.items():
        script = " ".join(f"(ping -q -n -c {count} -W 2 -I {s.ip} {d.ip} >/dev/null && echo OK {s.ip} {d.ip} "
                          f"|| echo NO {s.ip} {d.ip}) &" for s, d in items) + " wait"
        for line in sh.node_cmd(emu.net[host], script).splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] in ("OK", "NO"):
                result[(parts[1], parts[2])] = parts[0] == "OK"
    return result


def port_tx_bytes(emu: Emulation, host: str, ports: tuple[str, ...]) -> dict[str, int]:
    out = emu.net[host].cmd(" ; ".join(f"cat /sys/class/net/{p}/statistics/tx_bytes" for p in ports))
    return dict(zip(ports, (int(x) for x in out.split())))


def stop_clients(emu: Emulation, clients: list[Client]) -> None:
    for client in clients:
        emu.net[client.flow.src.host].stop(client.proc, IPERF_MARKER)

