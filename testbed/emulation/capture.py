"""Packet capture on a running fabric: tcpdump on one port, inside the namespace that holds it.

A port is named as the model names it: a host port (`p0s0h0-n0p0`, in the host's network
namespace, entered by the PID that holds it), a switch port (`p0s0r0t0-eth1`, in the root
namespace where Open vSwitch has its ports), or a cable by its two ends (`A,B`: captured at
its lower end, the host's when it has one; a cable carries the same frames at both ends). The
file is classic pcap (tcpdump -w), which Wireshark and scapy read.

tcpdump is this process's child and dies with it (setpriv --pdeathsig): Ctrl-C ends the capture
normally (tcpdump writes what it has, the file is complete); SIGTERM ends it too and goes on
unwinding; nothing of it outlives the command.
"""
from __future__ import annotations

import shutil
import signal
import subprocess
from dataclasses import dataclass

from testbed.core.errors import ParamError, TestbedError
from testbed.model.fabric import Fabric


@dataclass(frozen=True)
class Where:
    intf: str
    host: str | None       # None: the root namespace (a switch port)

    def __str__(self) -> str:
        return f"{self.intf} (in {self.host}'s namespace)" if self.host else f"{self.intf} (switch port)"


def locate(fabric: Fabric, port: str) -> Where:
    """Where PORT (a host port, a switch port, or a cable `A,B`) is captured; ParamError if the
    fabric has no such port or cable."""
    port = port.strip()
    if "," in port:
        ends = {e.strip() for e in port.split(",")}
        for link in fabric.links:
            if {link.a_intf, link.b_intf} == ends:
                return Where(link.a_intf, None if link.a in fabric.switches else link.a)
        raise ParamError(f"no cable {port!r} in this {fabric.family} fabric (name its two ends, "
                         "e.g. p0s0h0-n0p0,p0s0r0t0-eth1)")
    for link in fabric.links:
        if port == link.a_intf:
            return Where(port, None if link.a in fabric.switches else link.a)
        if port == link.b_intf:
            return Where(port, None)
    raise ParamError(f"no port {port!r} in this {fabric.family} fabric (a host port such as "
                     f"{fabric.host_links()[0].a_intf}, a switch port such as "
                     f"{fabric.host_links()[0].b_intf}, or a cable A,B)")


def tcpdump_argv(where: Where, pid: int | None, write: str | None, count: int | None,
                 bpf: str | None) -> list[str]:
    """tcpdump on `where`, entering the host's network namespace by `pid` (a host port). `bpf`
    reaches tcpdump as a filter expression only (after `--`; one that starts with `-` refused:
    it would be an option, such as a second -w)."""
    if bpf is not None and bpf.lstrip().startswith("-"):
        raise ParamError(f"--filter {bpf[:40]!r}: a filter expression (e.g. 'icmp or arp'), not an option")
    tcpdump = shutil.which("tcpdump")
    if tcpdump is None:
        raise ParamError("tcpdump is not installed (apt-get install tcpdump, or `make setup`)")
    argv = [tcpdump, "-i", where.intf, "-n", "-Z", "root"]   # -Z root: write where root may
    argv += ["-U", "-w", write] if write else ["-l"]          # -U: each packet written whole
    if count:
        argv += ["-c", str(count)]
    if bpf:
        argv += ["--", bpf]
    if where.host is not None:
        if pid is None:
            raise TestbedError(f"host {where.host} of this run has no recorded namespace")
        argv = ["nsenter", "-t", str(pid), "-n", *argv]
    if shutil.which("setpriv"):    # util-linux: tcpdump gets SIGTERM if we die (even SIGKILL)
        argv = ["setpriv", "--pdeathsig", "TERM", *argv]
    return argv


def run(argv: list[str], grace: float = 3.0, stdout: int | None = None) -> int:
    """Run tcpdump until it ends (-c N) or Ctrl-C; returns its exit status (0 on Ctrl-C).
    Any other unwinding (SIGTERM, SIGHUP) stops it first and goes on. `stdout`: a descriptor
    for `-w -` (the file opened by testbed/core/files.py, not by tcpdump)."""
    proc = subprocess.Popen(argv, stdout=stdout)
    try:
        return proc.wait()
    except KeyboardInterrupt:      # the terminal sent tcpdump the same SIGINT: it is finishing
        return _stop(proc, grace, already=True)
    except BaseException:
        _stop(proc, grace)
        raise


def _stop(proc: subprocess.Popen, grace: float, already: bool = False) -> int:
    """End tcpdump the way Ctrl-C does (SIGINT: it closes the file), then wait; SIGKILL if it
    is not gone within `grace` seconds. `already`: a Ctrl-C at the terminal reached it too,
    so it gets a moment before it is told again (a SIGINT sent to us alone did not reach it)."""
    try:
        if already:
            try:
                return proc.wait(0.5) and 0
            except subprocess.TimeoutExpired:
                pass
        proc.send_signal(signal.SIGINT)
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except KeyboardInterrupt:      # a second Ctrl-C: do not leave it running
        proc.kill()
        proc.wait()
    return 0
