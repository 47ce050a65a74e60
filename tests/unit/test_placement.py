"""Placement on several servers (testbed/model/placement.py): whole units, host links never cut."""
import json

import pytest

from testbed.cli import main
from testbed.core.errors import ParamError
from testbed.model import make_fabric
from testbed.model.placement import TOP, place, unit_of

SHAPES = [("hpn", {}), ("hpn", {"pods": 2, "segments": 2}), ("hpn", {"pods": 1, "segments": 3}),
          ("mpft", {}), ("mpft", {"leaves": 3}), ("mrft", {}), ("mrft", {"leaves": 4}),
          ("clos3", {}), ("clos3", {"pods": 3}), ("railonly", {})]


def test_every_family_has_a_placement_rule():
    from testbed.model import FAMILIES
    for family in FAMILIES:
        assert place(make_fabric(family), 1).nodes


def units(fab):
    return {unit_of(fab, n) for n in [*fab.switches, *fab.hosts]} - {TOP}


@pytest.mark.parametrize("family,settings", SHAPES)
def test_every_server_count_keeps_host_links_whole(family, settings):
    fab = make_fabric(family, settings)
    for n in range(1, len(units(fab)) + 1):
        p = place(fab, n)
        assert set(p.nodes) == set(fab.switches) | set(fab.hosts)
        assert all(p.server_of(l.a) == p.server_of(l.b) for l in fab.host_links())
        assert all(p.on(s) for s in p.servers), "every server gets something"
        # the cut links are exactly the switch links whose ends are apart
        assert set(p.cut) == {l for l in fab.switch_links() if p.server_of(l.a) != p.server_of(l.b)}
        top = {node for node in p.nodes if unit_of(fab, node) == TOP}
        assert len({p.server_of(node) for node in top}) <= 1, "the top tier is on one server"
        if n == 1:
            assert not p.cut


def test_hpn_by_segment():
    fab = make_fabric("hpn", {"pods": 2, "segments": 2})
    p = place(fab, 2)
    assert p.units == {"p0s0": "server0", "p0s1": "server0", "p1s0": "server1", "p1s1": "server1",
                       TOP: "server1"}
    assert p.server_of("p0s1r1t0") == p.server_of("p0s1h0") == "server0"
    assert p.server_of("p0a0n0") == p.server_of("c0") == "server1"
    # pod 0's ToR uplinks (8 ToRs x 2 aggregation switches of their plane) are cut, pod 1's not
    assert len(p.cut) == 16


def test_leafspine_by_host_group_and_clos3_by_pod():
    mpft = make_fabric("mpft")
    p = place(mpft, 2)
    assert p.server_of("pl0l0") == p.server_of("pl1l0") == p.server_of("g0h1") == "server0"
    assert p.server_of("pl0s0") == p.server_of("pl1s1") == "server1"
    assert len(p.cut) == 4          # group 0's two leaves x two spines of their plane
    clos = make_fabric("clos3")
    p = place(clos, ["a", "b"])
    assert p.server_of("p0e1h1") == p.server_of("p0a0") == "a" and p.server_of("c1") == "b"
    assert len(p.cut) == 4          # pod 0's two aggregation switches x two cores


@pytest.mark.parametrize("servers", [0, 3, ["a", "a"], ["a", ""]])
def test_bad_server_counts_are_refused(servers):
    with pytest.raises(ParamError):
        place(make_fabric("hpn"), servers)


def test_topo_show_prints_the_placement(capsys):
    assert main(["topo", "show", "clos3", "--set", "pods=3", "--servers", "2", "--json"]) == 0
    placed = json.loads(capsys.readouterr().out)["result"]["placement"]
    assert placed["cut_links"] == 8 and placed["host_links_cut"] == 0   # 2 pods x 2 aggs x 2 cores
    assert placed["servers"]["server0"]["units"] == ["p0", "p1"]
    assert main(["topo", "show", "hpn", "--servers", "2"]) == 0
    assert "cut links: 8" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["0", "5", "a,a"])
def test_topo_show_bad_servers_exits_2(value, capsys):
    try:
        status = main(["topo", "show", "hpn", "--servers", value])
    except SystemExit as e:     # argparse's own error for a malformed value
        status = e.code
    assert status == 2
    assert capsys.readouterr().err.count("\n") == 1
