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
