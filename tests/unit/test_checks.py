"""Which NIC pairs the reachability check pings: all of them on small fabrics, a sample that
grows linearly on large ones and still covers every NIC and every rail pair."""
import itertools

from testbed.measure.checks import ALL_PAIRS_UP_TO, ping_pairs
from testbed.model import make_fabric

SEGMENT = {"pods": 1, "hosts": 136, "backup_hosts": 8, "nics": 8, "rails": 8,
           "aggs_per_plane": 4, "radix": 256}


def test_small_fabrics_ping_every_routed_pair():
    fab = make_fabric("hpn")
    assert len(fab.nics()) <= ALL_PAIRS_UP_TO
    want = {(a, b) for a, b in itertools.permutations(fab.nics(), 2) if a.host != b.host}
    assert set(ping_pairs(fab)) == want


def test_a_segment_samples_every_nic_and_rail_pair_in_linear_size():
    fab = make_fabric("hpn", SEGMENT, emulated=False)
    nics = fab.nics()
    pairs = ping_pairs(fab)
    assert len(pairs) <= len(nics) + 8 * 7                 # a ring per rail + one per rail pair
    assert {a for a, _ in pairs} == set(nics) == {b for _, b in pairs}
    assert {(a.rail, b.rail) for a, b in pairs if a.rail != b.rail} == \
        set(itertools.permutations(range(8), 2))
    assert all(a.host != b.host for a, b in pairs)


def test_full_forces_every_pair_and_unroutable_pairs_are_never_asked():
    fab = make_fabric("mpft", {"leaves": 3, "hosts_per_leaf": 12})   # NIC i only in plane i
    assert len(fab.nics()) > ALL_PAIRS_UP_TO
    sample, full = ping_pairs(fab), ping_pairs(fab, full=True)
    assert set(sample) <= set(full) and len(sample) < len(full)
    assert all(a.rail == b.rail for a, b in full)          # planes never meet
    assert {a for a, _ in sample} == set(fab.nics())
