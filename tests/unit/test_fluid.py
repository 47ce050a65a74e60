"""The fluid model (testbed/model/fluid.py) on cases worked out by hand."""
import math

import pytest

from testbed.model.fluid import completion, makespan, max_min


def test_flows_sharing_one_bottleneck_split_it_equally():
    assert max_min({"l": 10}, [["l"], ["l"], ["l"], ["l"]]) == pytest.approx([2.5] * 4)


def test_a_flow_alone_gets_its_paths_narrowest_link():
    assert max_min({"a": 10, "b": 4, "c": 7}, [["a", "b", "c"]]) == pytest.approx([4])


def test_a_flow_on_an_uncongested_path_is_not_held_back_by_the_others():
    # two flows share x (10: 5 each); the third crosses only y (10) and gets all of it
    assert max_min({"x": 10, "y": 10}, [["x"], ["x"], ["y"]]) == pytest.approx([5, 5, 10])


def test_two_bottlenecks_the_narrower_one_frees_capacity_on_the_wider():
    # f0 crosses a (3) and b (10); f1 and f2 cross only b. a holds f0 at 3, and b's other 7
    # go to f1 and f2 equally: 3.5 each (an equal split of b would have been 3.33)
    assert max_min({"a": 3, "b": 10}, [["a", "b"], ["b"], ["b"]]) == pytest.approx([3, 3.5, 3.5])


def test_the_classic_parking_lot():
    # a long flow over l1 and l2 (both 1), a short flow on each: every flow gets 1/2
    assert max_min({"l1": 1, "l2": 1}, [["l1", "l2"], ["l1"], ["l2"]]) == pytest.approx([0.5] * 3)


def test_demands_cap_a_flow_and_the_rest_share_what_it_left():
    # segment placement's case: a 9 Mbit/s ring hop and four 3.75 background streams on 20
    assert max_min({"u": 20}, [["u"]] * 5,
                   [9, 3.75, 3.75, 3.75, 3.75]) == pytest.approx([5, 3.75, 3.75, 3.75, 3.75])
    assert max_min({}, [[]], [7]) == [7]


def test_a_link_named_twice_in_a_path_counts_once():
    assert max_min({"l": 10}, [["l", "l"], ["l"]]) == pytest.approx([5, 5])


@pytest.mark.parametrize("capacity,paths,demands,word", [
    ({"l": 1}, [[]], None, "unbounded"),
    ({"l": 1}, [["m"]], None, "no capacity"),
    ({"l": -1}, [["l"]], None, "negative"),
    ({"l": 1}, [["l"]], [-1], "negative"),
    ({"l": 1}, [["l"]], [1, 2], "demands"),
])
def test_bad_input_is_refused(capacity, paths, demands, word):
    with pytest.raises(ValueError, match=word):
        max_min(capacity, paths, demands)


def test_a_finishing_flow_frees_its_share_for_the_others():
    # two flows on a 10-unit link, sizes 10 and 30: both at 5 until t=2 (the small one done,
    # the big one has 20 left), then the big one alone at 10: done at t=4
    assert completion({"l": 10}, [["l"], ["l"]], [10, 30]) == pytest.approx([2, 4])


def test_equal_flows_on_one_link_finish_together_at_the_links_byte_time():
    assert completion({"l": 8}, [["l"]] * 4, [4] * 4) == pytest.approx([2] * 4)


def test_completion_with_two_bottlenecks():
    # capacities a=3, b=10; f0 over a and b, f1 and f2 over b; sizes 6, 7, 14.
    # rates 3, 3.5, 3.5: f0 (6 at 3) and f1 (7 at 3.5) are done at 2, f2 has 7 left;
    # then f2 alone on b at 10: its 7 take 0.7 s, done at 2.7
    assert completion({"a": 3, "b": 10}, [["a", "b"], ["b"], ["b"]], [6, 7, 14]) == pytest.approx([2, 2, 2.7])


def test_completion_of_empty_and_stuck_flows():
    assert completion({"l": 1, "dead": 0}, [["l"], ["dead"]], [0, 5]) == [0.0, math.inf]
    assert makespan({"l": 1}, [], []) == 0.0


def test_makespan_is_the_last_finish():
    # polarized vs spread: four equal flows on one of two links take twice as long as two per link
    cap = {"u0": 10, "u1": 10}
    assert makespan(cap, [["u0"]] * 4, [10] * 4) == pytest.approx(4)
    assert makespan(cap, [["u0"], ["u0"], ["u1"], ["u1"]], [10] * 4) == pytest.approx(2)


def test_a_paths_sending_ports_are_its_links_in_the_fluid_model():
    from testbed.model import make_fabric, policies
    from testbed.model.paths import port_rates, sending_ports
    fab = make_fabric("clos3")
    fwd = policies.Forwarding(fab, policies.all_routes(fab))
    src, dst = fab.nic("p0e0h0"), fab.nic("p1e1h1")
    hops = fwd.walk(*fwd.ingress(src), dst.ip, lambda sw, p, options: options[0])
    ports = sending_ports(fab, hops)
    # the host's own port, then edge, aggregation, core, aggregation and edge out ports
    assert ports[0] == "p0e0h0-n0p0" and [p.split("-")[0] for p in ports[1:]] == \
        ["p0e0", "p0a0", "c0", "p1a0", "p1e1"]
    rates = port_rates(fab)
    assert {rates[p] for p in ports} == {100 * fab.params.scale}
    # two hosts of one edge sending to pod 1 share the edge's uplink when they hash alike
    other = fwd.walk(*fwd.ingress(fab.nic("p0e0h1")), fab.nic("p1e0h0").ip, lambda sw, p, o: o[0])
    assert max_min(rates, [ports, sending_ports(fab, other)]) == pytest.approx([2.5, 2.5])
