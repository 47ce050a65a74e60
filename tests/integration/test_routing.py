"""ECMP hash control, read back from the switches with traces (no traffic needed)."""
import pytest

from testbed.trace import emulation_trace

pytestmark = pytest.mark.integration
TUPLES = 64


def tier_choices(emu, src, dst):
    """For each source port: (bucket index at the edge, bucket index at the aggregation switch)."""
    fab = emu.fabric
    choices = []
    for sport in range(40000, 40000 + TUPLES):
        hops = emulation_trace(emu, src, dst, sport=sport)
        assert len(hops) == 5 and hops[-1].out_port, hops   # edge, agg, core, agg, edge
        edge, agg = hops[0], hops[1]
        uplinks = lambda sw: sorted(l.a_port for l in fab.switch_links() if l.a == sw)
        choices.append((uplinks(edge.switch).index(edge.out_port),
                        uplinks(agg.switch).index(agg.out_port)))
    return choices


@pytest.mark.parametrize("mode", ["polarized", "seeded"])
def test_polarized_hashing_repeats_the_first_tier_choice(up, mode):
    emu = up("clos3", routing={"ecmp": mode})
    fab = emu.fabric
    choices = tier_choices(emu, fab.nic("p0e0h0"), fab.nic("p1e0h0"))
    used = {c[0] for c in choices}
    assert used == {0, 1}, "the edge must hash the 5-tuples over both uplinks"
    same = sum(1 for a, b in choices if a == b)
    if mode == "polarized":
        # one basis everywhere: flows that share an uplink at tier 1 share one again at tier 2
        assert same == TUPLES
    else:
        # independent tiers agree about half the time; outside [16, 48] of 64 has p < 1e-4
        assert 16 <= same <= 48, f"{same}/{TUPLES} agreements"
