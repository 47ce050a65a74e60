"""Collectives as run on a fabric: the traffic each one puts on the wire, and the meters."""
import pytest

from testbed.emulation.build import Emulation, Options
from testbed.measure.meters import Sampler
from testbed.model import make_fabric
from testbed.workload import collectives as C

from .conftest import leftovers

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def mpft():
    # 400G -> 4 Mbit/s: every NIC sending at once stays far from what the datapath forwards
    emu = Emulation(make_fabric("mpft", {"scale": 0.01}), Options())
    with emu:
        yield emu
    assert not leftovers(emu), leftovers(emu)


def as_run(run, relay=False):
    m = {}
    for f in run.flows:
        if f.relay == relay:
            m[(f.src, f.dst)] = m.get((f.src, f.dst), 0) + f.received
    return m


def check_run(emu, coll):
    before = C.host_port_counters(emu)
    (run,) = C.run(emu, coll)
    after = C.host_port_counters(emu)
    # every byte of every transfer was read by its receiver, between the planned pairs
    assert all(f.received == f.requested for f in run.flows), [f for f in run.flows
                                                               if f.received != f.requested]
    assert as_run(run) == coll.matrix(False)
    assert as_run(run, relay=True) == coll.matrix(True)
    # the fabric delivered the fabric transfers' bytes (and the relays never touched it)
    delivered = C.delivered_payload(before, after)
    assert abs(delivered - coll.fabric_bytes()) <= 0.02 * coll.fabric_bytes(), (delivered,
                                                                                coll.fabric_bytes())
    assert len(run.phase_seconds) == len(coll.phase_names)
    assert run.seconds == pytest.approx(sum(run.phase_seconds))
    assert run.busbw == pytest.approx(run.algbw * coll.busbw_factor())
    return run


def test_ring_allreduce_sends_to_ring_successors_on_each_rail(mpft):
    coll = C.ring_allreduce(mpft.fabric, None, 200_000)
    run = check_run(mpft, coll)
    # a phase cannot finish faster than its largest transfer at the NIC's rate
    nic_rate = mpft.fabric.links[0].gbps * mpft.fabric.params.scale * 1e6 / 8
    largest = max(t.nbytes for t in coll.phases()[0])
    assert run.phase_seconds[0] >= largest / nic_rate


def test_all_to_all_and_moe_relay_inside_hosts(mpft):
    check_run(mpft, C.all_to_all(mpft.fabric, None, 200_000))
    coll = C.moe_all_to_all(mpft.fabric, None, tokens=2, m=2, topk=4)
    assert coll.relay_bytes() > 0
    run = check_run(mpft, coll)
    assert {f.relay for f in run.flows} == {True, False}


def test_pipeline_with_pinned_ports_and_two_concurrent_jobs(mpft):
    fab = mpft.fabric
    hosts = sorted(fab.hosts)
    a = C.pipeline(fab, [[hosts[0]], [hosts[2]]], 100_000, channels=2, sport_base=44000, job="a")
    b = C.ring_allreduce(fab, [hosts[1], hosts[3]], 100_000, job="b")
    ra, rb = C.run(mpft, [a, b])
    assert ra.job == "a" and rb.job == "b"
    assert as_run(ra) == a.matrix() and as_run(rb) == b.matrix()
    assert sorted(f.sport for f in ra.flows) == sorted(t.sport for t in a.transfers)


def test_a_queue_forms_only_where_a_link_is_driven_past_its_rate(mpft):
    fab = mpft.fabric
    g = {h: fab.hosts[h].nics[0] for h in fab.hosts}
    hot, cool = g["g0h0"], g["g1h0"]
    port = {l.a_intf: l.b_intf for l in fab.host_links()}
    hot_port, cool_port = port[hot.ports[0]], port[cool.ports[0]]
    rate = fab.links[0].gbps * fab.params.scale * 1e6 / 8          # bytes/s of one NIC port
    seconds = 3
    sends = [  # two unpaced flows converge on `hot`'s ToR port; one flow at 40% of the rate to `cool`
        C.Send(g["g0h1"], hot, int(rate * seconds)),
        C.Send(g["g1h1"], hot, int(rate * seconds)),
        C.Send(g["g0h1"], cool, int(0.4 * rate * seconds / 2), rate=0.4 * rate),
    ]
    with Sampler([hot_port, cool_port], interval=0.05) as s:
        C.Runner(mpft).run_sends(sends)
    assert s.max_queue(hot_port) >= mpft.options.queue_bytes / 2
    assert s.mean_queue(hot_port) > 4 * max(s.mean_queue(cool_port), 1500)
    assert s.sent(hot_port) > s.sent(cool_port)
