"""The rail-only scenario (C13): its workload and its judge, fed figures like those its quick run
measured here (no fabric, no root)."""
import copy

import pytest

import scenarios
from scenarios.claims import rail_only as R
from testbed.core.errors import ParamError
from testbed.model import make_fabric
from testbed.scenario.base import INVALID, NOT_REPRODUCED, REPRODUCED

SIZE = 400_000
SHAPE = {"pods": 1, "segments": 2, "hosts": 1}


def mode(fab, mode_name, busy, sent_extra=16, received_extra=36, leak=(32, 88)):
    """A mode's figures as run_mode records them, with the few bytes over the payload a run here
    measured (headers counted as payload, SYNs of transfers without a path)."""
    transfers = R.workload(fab, mode_name, SIZE)
    tiers = [R.top_tier(fab, t) for t in transfers]
    rows = [{"src": t.src.name, "dst": t.dst.name, "phase": t.phase, "bytes": t.nbytes, "tier": k,
             "completed": k is not None, "seconds": 0.34 if k is not None else None}
            for t, k in zip(transfers, tiers)]
    nics = {}
    for nic in fab.nics():
        sent = sum(t.nbytes for t, k in zip(transfers, tiers) if k and t.src == nic)
        received = sum(t.nbytes for t, k in zip(transfers, tiers) if k and t.dst == nic)
        nics[nic.name] = {"sent": sent + sent_extra if sent else leak[0],
                          "received": received + received_extra if received else leak[1],
                          "expected_sent": sent, "expected_received": received}
    core = 2 * sum(t.nbytes for t, k in zip(transfers, tiers) if k == 3)
    done = all(r["completed"] for r in rows)
    return {"transfers": rows, "total": len(rows), "routed": sum(k is not None for k in tiers),
            "completed": sum(r["completed"] for r in rows), "seconds": 0.35 if done else None,
            "nic_bytes": nics, "link_bytes": {"tor-agg": 3_200_752, "agg-core": int(core * 1.06)},
            "expected_core_bytes": core, "cpu_busy": busy}


def recorded(shape=SHAPE, busy=(0.653, 0.051, 0.647, 0.651)):
    figures = {"setup": {"size": SIZE, "give_up_s": 4.0}, "series": {}, "cpu_busy": list(busy)}
    k = 0
    for family in R.FAMILIES:
        fab = make_fabric(family, shape)
        figures[family] = {}
        for m in R.MODES:
            figures[family][m] = mode(fab, m, busy[k])
            k += 1
    return figures


@pytest.fixture
def judge():
    return scenarios.get("rail-only").judge


def test_tenants_alternate_so_a_tenants_experts_sit_on_different_rails():
    fab = make_fabric("railonly", SHAPE)
    pairs = R.expert_pairs(fab)
    assert [(a.name, b.name) for a, b in pairs] == [
        ("p0s0h0-n0", "p0s1h0-n1"), ("p0s0h0-n1", "p0s1h0-n0"),
        ("p0s1h0-n0", "p0s0h0-n1"), ("p0s1h0-n1", "p0s0h0-n0")]
    assert all(a.rail != b.rail for a, b in pairs)
    wide = make_fabric("railonly", {**SHAPE, "nics": 4, "rails": 4})
    assert all(a.rail != b.rail for a, b in R.expert_pairs(wide))


def test_relay_crosses_on_the_senders_rail_and_hops_rails_inside_the_host():
    fab = make_fabric("railonly", SHAPE)
    transfers = R.workload(fab, "relay", SIZE)
    over = [t for t in transfers if not t.relay]
    inside = [t for t in transfers if t.relay]
    assert all(t.src.rail == t.dst.rail and t.phase == 0 for t in over)
    assert all(t.src.host == t.dst.host and t.phase == 1 for t in inside)
    assert sum(t.nbytes for t in over) == sum(t.nbytes for t in inside) == 4 * SIZE
    assert all(R.top_tier(fab, t) == 2 for t in over)
    assert all(R.top_tier(fab, t) is None for t in R.workload(fab, "no relay", SIZE))
    # at 10 Mbit/s per port one 400 KB transfer takes 0.32 s
    assert R.ideal_seconds(fab, transfers) == pytest.approx(0.32)


def test_reproduced(judge):
    j = judge(recorded())
    assert j.verdict == REPRODUCED, (j.measured, j.derived)
    assert j.derived["railonly_no_path"] == 4 and j.derived["railonly_detour"] == 0
    assert "rail-only 0/4 completed, HPN 4/4" in j.headline


def test_reproduced_with_more_nics():
    fig = recorded({**SHAPE, "nics": 4})
    j = scenarios.get("rail-only").judge(fig)
    assert j.verdict == REPRODUCED and j.derived["railonly_no_path"] == 16


def test_reproduced_over_the_core_detour_with_two_pods(judge):
    fig = recorded({"pods": 2, "segments": 2, "hosts": 1})
    j = judge(fig)
    assert j.verdict == REPRODUCED, (j.measured, j.derived)
    assert j.derived["railonly_no_path"] == 0 and j.derived["railonly_detour"] == 8
    assert "8 over the core" in j.headline


def test_not_reproduced_when_a_transfer_without_a_path_completes(judge):
    fig = recorded()
    row = fig["railonly"]["no relay"]["transfers"][0]
    row["completed"], row["seconds"] = True, 0.4
    nic = fig["railonly"]["no relay"]["nic_bytes"][row["src"]]
    nic["sent"] = SIZE
    j = judge(fig)
    assert j.verdict == NOT_REPRODUCED
    assert any("completed (no path)" in x for x in j.derived["disagreements"]["railonly no relay"])


def test_not_reproduced_when_hpn_does_not_complete_without_relay(judge):
    fig = recorded()
    for row in fig["hpn"]["no relay"]["transfers"]:
        row["completed"], row["seconds"] = False, None
    assert judge(fig).verdict == NOT_REPRODUCED


def test_not_reproduced_when_a_nic_misses_bytes_or_the_core_misses_the_detour(judge):
    fig = recorded()
    fig["hpn"]["relay"]["nic_bytes"]["p0s0h0-n0"]["received"] = SIZE // 2
    assert judge(fig).verdict == NOT_REPRODUCED
    fig = recorded({"pods": 2, "segments": 2, "hosts": 1})
    fig["railonly"]["no relay"]["link_bytes"]["agg-core"] = 0
    assert judge(fig).verdict == NOT_REPRODUCED


def test_retransmissions_on_top_of_what_was_sent_are_allowed(judge):
    fig = recorded()
    for b in fig["hpn"]["relay"]["nic_bytes"].values():
        b["sent"] = int(b["expected_sent"] * 1.31)          # measured with two pods: +31%
    assert judge(fig).verdict == REPRODUCED


def test_invalid_when_the_cpu_was_saturated(judge):
    fig = recorded(busy=(0.994, 0.449, 0.682, 0.632))         # a run here, on a busy machine
    assert judge(fig).verdict == INVALID


def test_judge_does_not_modify_its_figures(judge):
    fig = recorded()
    before = copy.deepcopy(fig)
    judge(fig)
    assert fig == before


@pytest.mark.parametrize("settings,words", [
    ({"rails": 1}, "rails=1, nics=2: needs 2 or more"),
    ({"nics": 1, "rails": 1}, "needs 2 or more"),
    ({"segments": 1}, "needs 2 or more hosts"),
    ({"give_up": 1.0, "size": 1_000_000}, "give_up=1: the busiest NIC needs 0.80 s"),
])
def test_meaningless_parameters_are_refused(settings, words):
    with pytest.raises(ParamError, match=words):
        scenarios.get("rail-only").configure(settings, quick=True)


def test_detour_needs_more_time():
    # a 400 KB transfer over one 15:1 core uplink (1.33 Mbit/s) takes 2.4 s
    with pytest.raises(ParamError, match=r"needs 2\.40 s at line rate; raise give_up to 7\.2"):
        scenarios.get("rail-only").configure({"pods": 2}, quick=True)
    scenarios.get("rail-only").configure({"pods": 2, "give_up": 8}, quick=True)
