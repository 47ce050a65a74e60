"""Port budgets B1-B4: every figure the fabric model counts at full scale equals the paper's."""
import json

import pytest

from testbed.core.errors import ParamError
from testbed.model import budget as B
from testbed.model.families import get

# (claim, key) -> the paper's figure, with the rounding the paper uses applied to the model's.
PAPER = {
    ("B1", "tor_tbps"): 51.2, ("B1", "tor_ports_400g"): 128, ("B1", "tor_split_ports"): 68,
    ("B1", "tor_host_ports"): 136, ("B1", "tor_active_ports"): 128,
    ("B1", "tor_backup_ports"): 8, ("B1", "tor_up_ports"): 60,
    ("B1", "tor_down_active_tbps"): 25.6, ("B1", "tor_down_all_tbps"): 27.2,
    ("B1", "tor_up_tbps"): 24, ("B1", "tor_ratio_active"): 1.067, ("B1", "tor_ratio_all"): 1.133,
    ("B2", "tors_per_segment"): 16, ("B2", "tor_pairs"): 8, ("B2", "hosts_per_segment"): 136,
    ("B2", "gpus_per_host"): 8, ("B2", "gpus_per_pair"): 128, ("B2", "gpus_active"): 1024,
    ("B2", "gpus_backup"): 64,
    ("B3", "segments_per_pod"): 15, ("B3", "planes"): 2, ("B3", "aggs_per_plane"): 60,
    ("B3", "agg_down_ports"): 120, ("B3", "agg_up_ports"): 8, ("B3", "agg_oversubscription"): 15,
    ("B3", "gpus_per_pod"): 15000,
    ("B3", "step_plain_tier1"): 64, ("B3", "step_plain_pod"): 2000,
    ("B3", "step_dual_tor_tier1"): 128, ("B3", "step_dual_tor_pod"): 4096,
    ("B3", "step_rail_tier1"): 1024, ("B3", "step_dual_plane_pod"): 8192,
    ("B3", "step_oversub_pod"): 15360,
    ("B4", "switch_ports"): 64, ("B4", "link_gbps"): 400, ("B4", "tiers_per_plane"): 2,
    ("B4", "leaves_per_plane"): 64, ("B4", "down_per_leaf"): 32,
    ("B4", "endpoints_per_plane"): 2048, ("B4", "spines_per_plane"): 32,
    ("B4", "switches_per_plane"): 96, ("B4", "planes"): 8, ("B4", "gpus"): 16384,
    ("B4", "switches"): 768, ("B4", "cost_mpft_kusd"): 4.39, ("B4", "cost_ft3_kusd"): 7.5,
}


@pytest.fixture(scope="module")
def hpn():
    return B.budget("hpn")


@pytest.fixture(scope="module")
def mpft():
    return B.budget("mpft")


def _get(hpn, mpft, claim, key):
    return (mpft if claim == "B4" else hpn)[claim][key]


@pytest.mark.parametrize("claim,key", sorted(PAPER))
def test_figure_equals_paper(hpn, mpft, claim, key):
    entry = _get(hpn, mpft, claim, key)
    assert entry["shown"] == PAPER[(claim, key)], entry
    assert entry["paper"] == PAPER[(claim, key)]
    assert entry["match"]


def test_every_entry_matches(hpn, mpft):
    bad = [(c, k, e) for r in (hpn, mpft) for c, k, e in B.claim_entries(r) if not e["match"]]
    assert not bad
    assert set(hpn) == {"meta", "B1", "B2", "B3"} and set(mpft) == {"meta", "B4"}


def test_exact_figures_before_rounding(hpn):
    assert hpn["B3"]["gpus_per_pod"]["figure"] == 15360
    assert hpn["B3"]["step_plain_pod"]["figure"] == 2048
    assert hpn["B1"]["tor_ratio_active"]["figure"] == pytest.approx(25.6 / 24)
    assert hpn["B1"]["tor_ratio_all"]["figure"] == pytest.approx(27.2 / 24)


def test_sources(hpn, mpft):
    """Counted figures come from the built fabric; only the costs are quoted constants."""
    sources = {(c, k): e["source"] for r in (hpn, mpft) for c, k, e in B.claim_entries(r)}
    assert {k for k, s in sources.items() if s == "quoted"} == {("B4", "cost_mpft_kusd"),
                                                               ("B4", "cost_ft3_kusd")}
    assert all(sources[("B1", k)] == "counted" for k in hpn["B1"])
    assert all(sources[("B2", k)] == "counted" for k in hpn["B2"])
    assert all(s == "derived" for (c, k), s in sources.items() if k.startswith("step_"))
    # with one pod built the core tier is computed, and says so
    assert sources[("B3", "agg_up_ports")] == "counted"


def test_step_table_lands_on_counted_figures(hpn):
    b2, b3 = hpn["B2"], hpn["B3"]
    assert b3["step_rail_tier1"]["figure"] == b2["gpus_active"]["figure"]
    assert b3["step_oversub_pod"]["figure"] == b3["gpus_per_pod"]["figure"]
    # 15:1 frees 56 aggregation ports: 64 down at 1:1 + 56 = the 120 actually cabled down
    assert 64 + b3["step_freed_agg_ports"]["figure"] == b3["agg_down_ports"]["figure"]


def test_presets_follow_the_papers():
    hpn = get("hpn").budget.presets["paper"]
    assert (hpn["rails"], hpn["nics"], hpn["hosts"], hpn["backup_hosts"]) == (8, 8, 136, 8)
    assert (hpn["segments"], hpn["aggs_per_plane"], hpn["cores"], hpn["pods"]) == (15, 60, 8, 2)
    mpft = get("mpft").budget.presets["paper"]
    assert (mpft["planes"], mpft["leaves"], mpft["spines"], mpft["hosts_per_leaf"],
            mpft["radix"]) == (8, 64, 32, 32, 64)


def test_fast_and_json_friendly(hpn, mpft):
    for r in (hpn, mpft):
        assert r["meta"]["seconds"]["build"] + r["meta"]["seconds"]["count"] < 2.0
        assert json.loads(json.dumps(r)) == r


def test_render(hpn, mpft):
    lines = B.render_text(hpn)
    assert any("15,000 (15,360)" in line for line in lines)
    assert not any("DIFFERS" in line for line in lines)
    from rich.console import Console
    console = Console(width=140, record=True)
    console.print(B.render(mpft))
    text = console.export_text()
    assert "B4" in text and "16,384" in text and "as quoted" in text


def test_bad_requests():
    with pytest.raises(ParamError):
        B.budget("mrft")
    with pytest.raises(ParamError):
        B.budget("hpn", "tiny")
