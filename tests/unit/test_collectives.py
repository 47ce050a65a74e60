"""The traffic matrix of each collective: who sends how many bytes to whom, in which phase."""
from collections import Counter, defaultdict
from types import SimpleNamespace

import pytest

from testbed.core.errors import ParamError
from testbed.emulation.net import counters
from testbed.model import make_fabric
from testbed.workload import collectives as C
from testbed.workload.collectives import delivery, patterns


@pytest.fixture(scope="module")
def hpn():
    return make_fabric("hpn", {"pods": 1, "hosts": 4})


@pytest.fixture(scope="module")
def mpft9():
    return make_fabric("mpft", {"leaves": 3, "hosts_per_leaf": 3})


def sent_by(coll, relay=False):
    out = defaultdict(int)
    for (src, _), b in coll.matrix(relay).items():
        out[src] += b
    return out


@pytest.mark.parametrize("steps", [False, True])
def test_ring_allreduce_one_ring_per_rail_to_the_successor(hpn, steps):
    hosts = list(hpn.hosts)
    n, size = len(hosts), 1_000_003
    coll = C.ring_allreduce(hpn, hosts, size, steps=steps)
    m = coll.matrix()
    nics = len(hpn.hosts[hosts[0]].nics)
    assert len(m) == n * nics, "one successor per rank per rail"
    for (src, dst), b in m.items():
        s, d = hpn.nic(src), hpn.nic(dst)
        assert s.index == d.index, "a ring stays on its rail"
        assert hosts.index(d.host) == (hosts.index(s.host) + 1) % n
        # (n-1)/n of the buffer in each of reduce-scatter and all-gather, to within the
        # rounding of chunks of size/n
        assert abs(b - 2 * (n - 1) * size / n) <= 2
    assert len(coll.phase_names) == (2 * (n - 1) if steps else 2)
    assert coll.relay_bytes() == 0
    assert coll.busbw_factor() == pytest.approx(2 * (n - 1) / n)


def test_ring_steps_and_phases_carry_the_same_bytes(hpn):
    a = C.ring_allreduce(hpn, None, 999_999, steps=True).matrix()
    b = C.ring_allreduce(hpn, None, 999_999, steps=False).matrix()
    assert a == b


def test_reduce_scatter_and_all_gather_are_one_pass(hpn):
    n, size = len(hpn.hosts), 400_000
    for fn, kind in ((C.reduce_scatter, "reducescatter"), (C.all_gather, "allgather")):
        coll = fn(hpn, None, size)
        assert coll.kind == kind and len(coll.phase_names) == 1
        assert set(coll.matrix().values()) == {size * (n - 1) // n}
        assert coll.busbw_factor() == pytest.approx((n - 1) / n)


def test_all_to_all_every_gpu_reaches_every_gpu_once(hpn):
    size = 800_000
    coll = C.all_to_all(hpn, None, size)
    gpus = [nic for h in hpn.hosts.values() for nic in h.nics]
    n = len(gpus)
    # what ends up where: fabric transfers to the rail peer, then relays inside the host
    fabric, relay = coll.matrix(False), coll.matrix(True)
    for (src, dst), b in fabric.items():
        s, d = hpn.nic(src), hpn.nic(dst)
        assert s.host != d.host and s.index == d.index, "across hosts only on the sender's rail"
        per_host = len(hpn.hosts[d.host].nics)
        assert b == per_host * size // n
    for src, dst in relay:
        assert hpn.nic(src).host == hpn.nic(dst).host
    # every GPU sends (n-1)/n of its buffer away: the fabric part plus its own host's relays
    hosts = len(hpn.hosts)
    nics = len(gpus) // hosts
    for g in gpus:
        fabric_out = sum(b for (s, _), b in fabric.items() if s == g.name)
        assert fabric_out == (hosts - 1) * nics * size // n
    assert coll.busbw_factor() == pytest.approx((n - 1) / n)
    assert [t.phase for t in coll.transfers if t.relay] and \
        {t.phase for t in coll.transfers if not t.relay} == {0}


@pytest.mark.parametrize("m", [1, 2, 4, 8])
def test_moe_fabric_bytes_per_token_match_the_formula(mpft9, m):
    tokens = 5
    coll = C.moe_all_to_all(mpft9, None, tokens=tokens, m=m)
    gpus = len(mpft9.nics())
    per_token = coll.fabric_bytes() / (gpus * tokens)
    assert per_token == C.moe_bytes_per_token(m)
    # dispatch in FP8 (1 byte per value), combine in BF16 (2): combine carries twice dispatch
    by_phase = Counter()
    for t in coll.transfers:
        by_phase[coll.phase_names[t.phase]] += t.nbytes
    assert by_phase["combine"] == 2 * by_phase["dispatch"]
    # one copy per node: a sender's dispatch goes to m distinct hosts, never its own, one
    # transfer (hence one copy) per host
    for nic in mpft9.nics():
        hosts = [t.dst.host for t in coll.transfers if t.src == nic and t.phase == 0]
        assert len(hosts) == len(set(hosts)) == m and nic.host not in hosts


def test_moe_claim_c11_numbers():
    assert C.moe_bytes_per_token(4, 7000, 1, 2) == 84_000            # 84 KB
    assert C.moe_bytes_per_token(8, 7000, 1, 2) == 2 * 84_000        # 168 KB: one copy per expert


def test_moe_relays_stay_inside_hosts_and_only_with_several_gpus(mpft9):
    coll = C.moe_all_to_all(mpft9, None, tokens=3, m=2)
    assert coll.relay_bytes() > 0
    for t in coll.transfers:
        if t.relay:
            assert t.src.host == t.dst.host and t.src != t.dst
    single = make_fabric("mpft", {"planes": 1, "leaves": 3, "hosts_per_leaf": 3})
    assert C.moe_all_to_all(single, None, tokens=3, m=2).relay_bytes() == 0


def test_moe_spread_targets_cover_all_nodes():
    targets = {tuple(C.moe_targets(9, 0, 2, t, spread=True)) for t in range(8)}
    assert {n for ts in targets for n in ts} == set(range(1, 9))
    assert C.moe_targets(9, 3, 4) == [4, 5, 6, 7]
    with pytest.raises(ParamError):
        C.moe_targets(4, 0, 4)


def test_pipeline_sends_between_consecutive_stages_in_gpipe_order(hpn):
    hosts = list(hpn.hosts)
    stages = [[hosts[0]], [hosts[1]], [hosts[2]]]
    coll = C.pipeline(hpn, stages, size=1000, microbatches=3, channels=2, sport_base=41000)
    nics = len(hpn.hosts[hosts[0]].nics)
    assert len(coll.phase_names) == 3 + 3 - 2
    for t in coll.transfers:
        s = [h for st in stages for h in st].index(t.src.host)
        assert [h for st in stages for h in st].index(t.dst.host) == s + 1
        assert t.src.index == t.dst.index
        assert 0 <= t.phase - s < 3
    # each stage boundary moves size x microbatches per NIC
    m = coll.matrix()
    assert set(m.values()) == {1000 * 3}
    assert len(m) == 2 * nics
    # pinned ports: distinct within a phase for one source address
    for phase in coll.phases():
        ports = Counter((t.src.ip, t.sport) for t in phase)
        assert max(ports.values()) == 1
    assert coll.busbw_factor() == 1.0


def test_bus_bandwidth_factors_follow_nccl_tests():
    assert C.busbw_factor("allreduce", 8) == pytest.approx(1.75)
    assert C.busbw_factor("alltoall", 8) == pytest.approx(0.875)
    assert C.busbw_factor("allgather", 4) == pytest.approx(0.75)
    assert C.algbw(1_000_000, 2.0) == 500_000
    run = C.CollectiveRun("j", "allreduce", 1_000_000, 4, 2.0, [1.0, 1.0])
    assert run.busbw == pytest.approx(run.algbw * 1.5)


def test_every_public_name_is_reachable_from_the_package():
    for name in C.__all__:
        assert getattr(C, name) is not None
    from testbed.workload.collectives import Collective
    assert Collective is patterns.Collective
    with pytest.raises(AttributeError):
        C.no_such_name  # noqa: B018 - the attribute access is what raises


def test_delivered_payload_is_wire_bytes_less_headers():
    # the loopback interface stands in for a switch port facing a host
    link = SimpleNamespace(b_intf="lo")
    emu = SimpleNamespace(fabric=SimpleNamespace(host_links=lambda: [link]), counters=counters.read)
    before = C.host_port_counters(emu)
    assert set(before) == {"lo"} and all(isinstance(v, int) for v in before["lo"])
    after = {"lo": (before["lo"][0] + 10 * delivery.HEADER_BYTES + 5000, before["lo"][1] + 10)}
    assert C.delivered_payload(before, after) == 5000


def test_bad_input_is_refused(hpn):
    with pytest.raises(ParamError):
        C.ring_allreduce(hpn, ["p0s0h0"], 1000)
    with pytest.raises(ParamError):
        C.ring_allreduce(hpn, ["nosuch", "p0s0h0"], 1000)
    with pytest.raises(ParamError):
        C.pipeline(hpn, [["p0s0h0"]], 1000)
