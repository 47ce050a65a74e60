"""Rates from the receiver's own intervals (traffic.received_mbps), the same whatever iperf3's
version: iperf3 3.18 accounts `-O` (omitted seconds) differently from 3.12, so the check no
longer passes `-O` and leaves the warm-up out itself."""
import pytest

from testbed.model.fabric import Nic
from testbed.workload import traffic


def interval(start, seconds, nbytes):
    return {"sum": {"start": start, "end": start + seconds, "seconds": seconds, "bytes": nbytes,
                    "bits_per_second": nbytes * 8 / seconds}}


def result(intervals, end_bps=1e6):
    return {"end": {"sum_received": {"bits_per_second": end_bps}},
            "server_output_json": {"intervals": intervals}}


def test_the_warm_up_is_left_out():
    slow_start = interval(0.0, 0.5, 10_000)           # 0.16 Mbit/s
    steady = [interval(t, 0.5, 625_000) for t in (1.0, 1.5, 2.0, 2.5)]   # 10 Mbit/s
    r = result([slow_start, interval(0.5, 0.5, 300_000), *steady])
    assert traffic.received_mbps(r, warm=1.0) == pytest.approx(10.0)
    assert traffic.received_mbps(r) < 10.0             # from 0 s the slow start counts


def test_a_short_last_interval_weighs_by_its_length():
    r = result([interval(1.0, 1.0, 1_250_000), interval(2.0, 0.1, 12_500)])  # 10, then 1 Mbit/s
    assert traffic.received_mbps(r, warm=1.0) == pytest.approx(1_262_500 * 8 / 1.1 / 1e6)


def test_without_the_receivers_intervals_the_end_totals():
    r = {"end": {"sum_received": {"bits_per_second": 5e6}}}
    assert traffic.received_mbps(r) == 5.0
    with pytest.raises(ValueError):
        traffic.received_mbps(r, warm=1.0)


def test_the_client_asks_for_the_receivers_report_and_never_omits():
    flow = traffic.Flow(Nic("h0", 0, 0, "10.0.0.1", "", ()), Nic("h1", 0, 0, "10.0.0.2", "", ()))
    cmd = traffic.client_command(flow, 3, server_output=True)
    assert "--get-server-output" in cmd and " -O " not in cmd and " -l " not in cmd
    assert " -l 8192" in traffic.client_command(flow, 3, block=8192)


class SlowHost:
    """A host whose spawns take a while, as on a busy machine; each command runs here, its
    output in `out`."""

    def __init__(self, spawned):
        self.spawned = spawned

    def spawn(self, argv, marker, out=None):
        import shlex
        import subprocess
        import time
        argv = shlex.split(argv) if isinstance(argv, str) else argv
        assert marker in " ".join(argv)
        with open(out, "wb") as f:
            proc = subprocess.Popen(argv, stdout=f)
        time.sleep(0.2)
        self.spawned.append(time.time())
        return proc


def test_flows_run_together_start_at_one_moment(tmp_path, monkeypatch):
    """Issue 40 item 12: two 3 s flows on one 5 Mbit/s link "received" 6.36 Mbit/s together, the
    port counters 4.91: clients started one after another measure over windows that do not
    coincide, each rate right over its own window and their sum beyond the link. Every client
    of run_flows starts only once the last one is spawned."""
    from types import SimpleNamespace

    from testbed.emulation.run import runstate
    spawned = []
    state = runstate.RunState("hpn1-1")
    state.dir = tmp_path
    hosts = {h: SlowHost(spawned) for h in ("h0", "h1", "h2")}
    emu = SimpleNamespace(state=state, net=hosts)
    monkeypatch.setattr(traffic, "start_server", lambda *a, **k: None)
    # the client's command: when it started (instead of iperf3's JSON)
    monkeypatch.setattr(traffic, "client_command", lambda *a, **k: "sh -c 'date +%s.%N' iperf3")
    started = []
    monkeypatch.setattr(traffic, "wait_client", lambda emu, c, timeout: started.append(
        c.proc.wait() == 0 and float(c.out.read_text())))
    nics = [Nic(h, 0, 0, f"10.0.0.{k}", "", ()) for k, h in enumerate(hosts)]
    traffic.run_flows(emu, [traffic.Flow(nics[k], nics[(k + 1) % 3]) for k in range(3)], 3)
    assert len(started) == 3 and min(started) >= max(spawned), (started, spawned)
