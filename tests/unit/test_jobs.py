"""The job model (testbed/workload/jobs.py): placement on NICs and rails, the launcher's
environment, and one-line errors for what cannot be placed. Pure: no root."""
import pytest

from testbed.core.errors import ParamError
from testbed.model import make_fabric
from testbed.workload.jobs import Job, place


@pytest.fixture(scope="module")
def hpn():
    return make_fabric("hpn", {})      # 2 pods x 2 hosts, 2 NICs on 2 rails, dual-ported


def test_one_rank_per_host_on_rail_zero(hpn):
    ranks = place(Job("{python} x.py --rank {rank}", rails=(0,)), hpn)
    assert [r.nic for r in ranks] == [f"{h}-n0" for h in hpn.hosts]
    assert [r.rank for r in ranks] == [0, 1, 2, 3] and {r.local_rank for r in ranks} == {0}
    first = ranks[0]
    assert first.argv[1:] == ("x.py", "--rank", "0")
    assert first.env["MASTER_ADDR"] == first.addr == hpn.nic(first.nic).ip
    assert {r.env["MASTER_ADDR"] for r in ranks} == {first.addr}
    assert ranks[3].env.items() >= {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "0",
                                    "MASTER_PORT": "29500", "TESTBED_ADDR": ranks[3].addr}.items()


def test_host_ranks_alternate_rails_as_rail_aligned_rings(hpn):
    ranks = place(Job("run"), hpn)
    assert [hpn.nic(r.nic).rail for r in ranks] == [0, 1, 0, 1]


def test_per_nic_gives_a_host_consecutive_ranks(hpn):
    ranks = place(Job("run --local {local_rank}", per="nic", hosts=("p0s0h0", "p1s0h1")), hpn)
    assert [(r.host, r.local_rank) for r in ranks] == [
        ("p0s0h0", 0), ("p0s0h0", 1), ("p1s0h1", 0), ("p1s0h1", 1)]
    assert ranks[1].argv == ("run", "--local", "1")
    assert {r.env["LOCAL_WORLD_SIZE"] for r in ranks} == {"2"}


def test_socket_ifname_names_each_nics_interface(hpn):
    dual = place(Job("run {ifname}"), hpn)[0]     # its bond, or its link on the multipath fallback
    assert dual.ifname == "p0s0h0-n0" == dual.env["GLOO_SOCKET_IFNAME"] == dual.argv[1]
    assert dual.env["NCCL_SOCKET_IFNAME"] == "p0s0h0-n0"
    single = place(Job("run"), make_fabric("mpft", {}))[0]
    assert single.env["GLOO_SOCKET_IFNAME"] == single.ifname == "g0h0-n0p0"


def test_env_values_take_placeholders_and_override(hpn):
    ranks = place(Job("run", env=(("MY_RANK", "r{rank}@{host}"), ("MASTER_PORT", "1")),
                      master_port=30000), hpn)
    assert ranks[2].env["MY_RANK"] == "r2@p1s0h0"
    assert ranks[0].env["MASTER_PORT"] == "1"
    assert "29500" not in " ".join(place(Job("x {master_port}", master_port=30000), hpn)[0].argv)


def test_ranks_takes_the_first_slots(hpn):
    assert [r.host for r in place(Job("run", ranks=2), hpn)] == ["p0s0h0", "p0s0h1"]


@pytest.mark.parametrize("job, message", [
    (Job("run", rails=(2,)), "rail 2 does not exist on host p0s0h0 (its rails: 0, 1)"),
    (Job("run", ranks=5), "ranks=5: more ranks than hosts to place them on (4)"),
    (Job("run", per="nic", ranks=9), "ranks=9: more ranks than NICs to place them on (8)"),
    (Job("run", per="gpu"), "per='gpu': choose from nic, host"),
    (Job("run", hosts=("nope",)), "no host 'nope' in this hpn fabric"),
    (Job("run {gpu}"), "unknown placeholder {gpu}"),
    (Job("run {rank"), "write {{ and }} for braces"),
    (Job("run 'x"), "command: No closing quotation"),
    (Job("  "), "command is empty"),
    (Job("run", timeout=0), "timeout=0: must be between 1 and 86400 s"),
    (Job("run", master_port=80), "master_port=80"),
    (Job("run", ranks=0), "ranks=0: need at least one rank"),
])
def test_bad_jobs_are_one_line(hpn, job, message):
    with pytest.raises(ParamError) as e:
        place(job, hpn)
    assert message in str(e.value) and "\n" not in str(e.value)
    assert str(e.value).startswith("job job: ")
