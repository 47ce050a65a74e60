"""A host-side, probe-based port health detector (claim C4), run inside a host namespace:

    python -m testbed.inhost.detector --interval 0.015 --dead-after 0.06 --log FILE NICSPEC ...

Carrier tells a NIC nothing about a link whose NIC-to-ToR direction is dead (HPN's one-way fault:
the ToR saw it, the NIC firmware ignored Link Fault Signaling). This detector does what carrier
cannot: every `interval` it sends, on each port of each dual-ported NIC, an ARP request for the
gateway (10.255.255.254), which the ToR that received it answers itself (a rule the controller
installs on every switch, as a ToR's own CPU would answer). A port from which no answer has
come for `dead_after` seconds is taken out of the NIC's bond; it is put back once `recover`
answers in a row have come again (probes keep running on a removed port).

Taking a port out:
- multipath backend: the NIC's routing table (and the main table for the host's first NIC) is
  rewritten with only the live ports (`ip route replace default table T src IP nexthop ...`);
- bonding backend: the port leaves the bond (sysfs `bonding/slaves`) and is set up again so that
  it can go on probing; it rejoins the bond when it recovers.
A NIC's last live port is never taken out, however long it is silent: there is nothing better
to send on, and a port already out for a real fault must not come back because the other went
quiet for a moment (a starved CPU delays answers on every port at once).

NICSPEC is JSON: {"ip", "mac", "table", "main": bool, "bond": name or null, "ports": [...]}.
Each state change is one JSON line on the log (t is CLOCK_MONOTONIC, shared by all namespaces):
{"t": ..., "event": "start" | "down" | "up", "nic": ip, "port": ..., "silence_ms": ...}.
Standard library only, so it starts fast in every host.
"""
from __future__ import annotations

import argparse
import json
import select
import signal
import socket
import subprocess
import sys
import time

ETH_P_ARP = 0x0806
GATEWAY_IP = "10.255.255.254"


def probe_frame(ip: str, mac: str, gateway: str = GATEWAY_IP) -> bytes:
    """An ARP request from (ip, mac) for `gateway`, broadcast."""
    hw = bytes.fromhex(mac.replace(":", ""))
    eth = b"\xff" * 6 + hw + ETH_P_ARP.to_bytes(2, "big")
    arp = (bytes.fromhex("0001080006040001") + hw + socket.inet_aton(ip) + b"\x00" * 6
           + socket.inet_aton(gateway))
    return eth + arp


def is_gateway_reply(frame: bytes, ip: str, gateway: str = GATEWAY_IP) -> bool:
    """Is `frame` an ARP reply from `gateway` to `ip`?"""
    if len(frame) < 42 or frame[12:14] != ETH_P_ARP.to_bytes(2, "big"):
        return False
    arp = frame[14:42]
    return (arp[6:8] == b"\x00\x02" and arp[14:18] == socket.inet_aton(gateway)
            and arp[24:28] == socket.inet_aton(ip))


def route_commands(nic: dict, live: list[str], gateway: str = GATEWAY_IP) -> list[list[str]]:
    """The commands that make `live` (a subset of nic["ports"]) the ports the NIC sends on."""
    if nic.get("bond"):
        return []   # the bonding backend changes membership instead (apply_bond)
    if len(live) == 1:
        hops = ["via", gateway, "dev", live[0], "onlink"]
    else:
        hops = [w for p in live for w in ("nexthop", "via", gateway, "dev", p, "onlink")]
    cmds = [["ip", "route", "replace", "default", "table", str(nic["table"]), "src", nic["ip"], *hops]]
    if nic.get("main"):
        cmds.append(["ip", "route", "replace", "default", "src", nic["ip"], *hops])
    return cmds


class Port:
    def __init__(self, name: str, nic: dict):
        self.name, self.nic = name, nic
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP))
        self.sock.bind((name, ETH_P_ARP))
        self.sock.setblocking(False)
        self.frame = probe_frame(nic["ip"], nic["mac"])
        self.last_reply = time.monotonic()   # grace: a port starts live
        self.live = True
        self.streak = 0                      # answers since the last tick, while dead

    def send(self) -> None:
        try:
            self.sock.send(self.frame)
        except OSError:   # no carrier, queue full: the missing answer says it
            pass

    def drain(self, now: float) -> None:
        while True:
            try:
                frame = self.sock.recv(2048)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if is_gateway_reply(frame, self.nic["ip"]):
                self.last_reply = now
                self.streak += 1


class Detector:
    def __init__(self, nics: list[dict], interval: float, dead_after: float, recover: int, log,
                 make_port=Port):
        self.nics, self.interval, self.dead_after = nics, interval, dead_after
        self.recover, self.log = recover, log
        self.ports = [make_port(p, nic) for nic in nics for p in nic["ports"]]
        self.by_nic = {nic["ip"]: [p for p in self.ports if p.nic is nic] for nic in nics}
        self.running = True
        self.last_tick: float | None = None

    def emit(self, **event) -> None:
        self.log.write(json.dumps({"t": round(time.monotonic(), 4), **event}) + "\n")
        self.log.flush()

    def apply(self, nic: dict, changed: Port) -> None:
        ports = self.by_nic[nic["ip"]]
        live = [p.name for p in ports if p.live] or [p.name for p in ports]
        if nic.get("bond"):
            slaves = f"/sys/class/net/{nic['bond']}/bonding/slaves"
            sign = "+" if changed.live else "-"
            if changed.live:
                subprocess.run(["ip", "link", "set", changed.name, "down"], check=False)
            with open(slaves, "w") as f:
                f.write(f"{sign}{changed.name}")
            # a released slave is closed: open it again so that it goes on probing
            subprocess.run(["ip", "link", "set", changed.name, "up"], check=False)
            return
        for cmd in route_commands(nic, live):
            subprocess.run(cmd, check=False, capture_output=True)

    def others_live(self, port: Port) -> bool:
        """Does another port of `port`'s NIC carry traffic now?"""
        return any(p.live for p in self.by_nic[port.nic["ip"]] if p is not port)

    def tick(self, now: float) -> None:
        if self.last_tick is not None:
            busy = now - self.last_tick - self.interval
            if busy > self.interval:
                # we sent no probes and read no answers for `busy` s (changing a bond, a starved
                # CPU): that is our silence, not the ports'. Without this, the time one port's
                # bond change takes can make every other port look dead.
                for p in self.ports:
                    p.last_reply += busy
        self.last_tick = now
        for p in self.ports:
            silence = now - p.last_reply
            if p.live and silence > self.dead_after and self.others_live(p):
                p.live, p.streak = False, 0
                self.apply(p.nic, p)
                self.emit(event="down", nic=p.nic["ip"], port=p.name, silence_ms=round(silence * 1000, 1))
            elif not p.live and p.streak >= self.recover and silence < self.dead_after:
                p.live = True
                self.apply(p.nic, p)
                self.emit(event="up", nic=p.nic["ip"], port=p.name, silence_ms=round(silence * 1000, 1))
            if not p.live and silence > 2 * self.interval:
                p.streak = 0     # answers must come in a row to bring a port back
            p.send()

    def run(self) -> None:
        self.emit(event="start", ports=[p.name for p in self.ports])
        next_tick = time.monotonic()
        while self.running:
            now = time.monotonic()
            if now >= next_tick:
                for p in self.ports:     # answers that came while we were not looking count
                    p.drain(now)
                self.tick(now)
                next_tick += self.interval
                if next_tick < now:            # we were starved: do not burst to catch up
                    next_tick = now + self.interval
            ready, _, _ = select.select([p.sock for p in self.ports], [], [],
                                        max(0.0, next_tick - time.monotonic()))
            now = time.monotonic()
            for p in self.ports:
                if p.sock in ready:
                    p.drain(now)
        for p in self.ports:            # leave every port in use, as the host was configured
            if not p.live:
                p.live = True
                self.apply(p.nic, p)
                self.emit(event="up", nic=p.nic["ip"], port=p.name, silence_ms=None, reason="stop")
        self.emit(event="stop")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m testbed.inhost.detector")
    ap.add_argument("--interval", type=float, default=0.015, help="seconds between probes per port")
    ap.add_argument("--dead-after", type=float, default=0.06,
                    help="seconds without an answer before a port is taken out")
    ap.add_argument("--recover", type=int, default=5, help="answers in a row that bring a port back")
    ap.add_argument("--log", default="-", help="JSON-lines event log (default stdout)")
    ap.add_argument("nics", nargs="+", help="NIC specs as JSON")
    args = ap.parse_args(argv)
    nics = [json.loads(s) for s in args.nics]
    log = sys.stdout if args.log == "-" else open(args.log, "a")
    det = Detector(nics, args.interval, args.dead_after, args.recover, log)

    def stop(signum, frame):
        det.running = False
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    det.run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
