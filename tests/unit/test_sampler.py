"""Sampler timestamps: each interface gets the moment of its own read, so a rate over a window
does not count the read's length (seconds, at thousands of ports on a busy CPU) as traffic."""
import pytest

from scenarios.claims.segment_tor_failure import _summed
from testbed.emulation.net.counters import Sampler


def sampler_with(*samples):
    s = Sampler(["a", "b"], interval=1.0)
    s.series = {"a": [], "b": []}
    for t, spread, values in samples:
        s.add(t, {i: (v, 0) for i, v in zip("ab", values)}, spread)
    return s


def test_each_interface_is_stamped_at_its_own_read():
    s = sampler_with((1.0, 0.4, (10, 20)))
    assert [p[0] for p in (s.series["a"][0], s.series["b"][0])] == pytest.approx([1.1, 1.3])


def test_a_slow_read_at_the_end_does_not_inflate_the_rate():
    # 1,000 bytes per second on both: the second read took 2 s, the first none
    s = sampler_with((0.0, 0.0, (0, 0)), (10.0, 2.0, (10500, 11500)))
    assert s.mean_rate(["a"], 0, 20) == pytest.approx(0.008)
    assert s.mean_rate(["b"], 0, 20) == pytest.approx(0.008)


def test_summed_counters_keep_samples_together_at_a_window_edge():
    s = sampler_with((0.0, 0.0, (0, 0)), (1.0, 0.2, (5, 7)), (2.0, 0.2, (9, 13)))
    # the window starts between a's (1.05) and b's (1.15) read of the second sample: that sample
    # is out for both, not a's third added to b's second
    assert _summed(s, ["a", "b"], 1.06, 3.0) == [(2.05, 22)]
    assert _summed(s, ["a", "b"], 1.0, 3.0) == [(1.05, 12), (2.05, 22)]
