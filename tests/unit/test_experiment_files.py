"""Experiment files without a fabric: every shipped file and the README's example load; a bad file
is one line naming the file, the line and the key; phases, their means and the losses."""
from pathlib import Path

import pytest

from testbed.core.errors import ParamError
from testbed.experiments import check, phases
from testbed.experiments.spec import Fault

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = """\
name = "nic0-link-down"
[fabric]
family = "hpn"
nics = 3                 # any `topo show` parameter
[routing]
ecmp = "seeded"          # the options of `up`: ecmp, policy, core, detector
[[traffic]]
kind = "iperf3"          # or a collective: allreduce, reduce-scatter, all-gather, all-to-all, moe, pipeline
from = "p0s0h0"          # a host (all its NICs, NIC i to NIC i) or a NIC (p0s0h0-n1)
to = "p0s0h1"
streams = 4              # per NIC
seconds = 10
[[fault]]
at = 4.0                 # seconds after traffic starts
kind = "link-down"       # link-down, flap, one-way, switch-down
port = "p0s0h0-n0p0"     # a host port, or SWITCH-ethN
for = 3.0
[measure]
throughput = ["p0s0h0"]  # hosts, NICs or links whose rate series to record
queues = []              # switch egress ports whose queue series to record
"""


def write(tmp_path, text: str) -> str:
    path = tmp_path / "x.toml"
    path.write_text(text)
    return str(path)


def test_the_example_loads(tmp_path):
    spec = check.load(write(tmp_path, EXAMPLE))
    assert spec.name == "nic0-link-down" and spec.fabric.params.nics == 3
    assert spec.routing == {"ecmp": "seeded"} and not spec.detector
    (t,) = spec.traffic
    assert (t.kind, t.src, t.dst, t.streams, t.seconds) == ("iperf3", "p0s0h0", "p0s0h1", 4, 10.0)
    assert len(t.pairs(spec.fabric, None)) == 3
    (f,) = spec.faults
    assert (f.kind, f.at, f.end, f.target) == ("link-down", 4.0, 7.0, "p0s0h0-n0p0")
    assert check.watched(spec.fabric, "p0s0h0").intfs == tuple(
        l.b_intf for l in spec.fabric.host_links() if l.a == "p0s0h0")


@pytest.mark.parametrize("path", sorted((ROOT / "experiments").glob("*.toml")), ids=lambda p: p.name)
def test_every_shipped_experiment_loads(path):
    spec = check.load(str(path))
    assert spec.traffic and spec.throughput and spec.name == path.stem


def test_the_shipped_example_is_the_readme_example():
    assert (ROOT / "experiments" / "nic0-link-down.toml").read_text().endswith(EXAMPLE.split("\n", 1)[1])


# (what is changed in the example, the line the message names, what it says)
BAD = [
    ('nics = 3', 'nics = 0', 4, "[fabric]: nics: nics=0: must be between 1 and 256"),
    ('nics = 3', 'nosuch = 3', 4, "[fabric]: nosuch: unknown parameter 'nosuch'"),
    ('family = "hpn"', 'family = "fat"', 3, "[fabric]: family: 'fat': choose from"),
    ('ecmp = "seeded"', 'ecmp = "random"', 6, "[routing]: ecmp: routing ecmp='random'"),
    ('to = "p0s0h1"', 'to = "p9s0h1"', 10, "[[traffic]] 1: to: no host or NIC 'p9s0h1'"),
    ('to = "p0s0h1"', 'to = "p0s0h1-n0"', 10, "both be hosts or both be NICs"),
    ('streams = 4', 'streams = "4"', 11, "[[traffic]] 1: streams: expected int, got '4'"),
    ('streams = 4', 'streams = 0', 11, "streams: 0: must be between 1 and 64"),
    ('kind = "iperf3"', 'kind = "ftp"', 8, "[[traffic]] 1: kind: 'ftp': choose from iperf3"),
    ('port = "p0s0h0-n0p0"', 'port = "p0s0h0-n7p0"', 16, "[[fault]] 1: port: no port 'p0s0h0-n7p0'"),
    ('kind = "link-down"', 'kind = "meteor"', 15, "[[fault]] 1: kind: 'meteor': choose from"),
    ('for = 3.0', 'four = 3.0', 17, "[[fault]] 1: four: unknown key"),
    ('at = 4.0', 'at = 9.0', 14, "the fault ends at 12 s, after the traffic (10 s"),
    ('at = 4.0', 'at = 0.5', 14, "inside the warm-up"),
    ('throughput = ["p0s0h0"]', 'throughput = ["nope"]', 19, "[measure]: throughput: no port 'nope'"),
    ('queues = []', 'queues = ["p0s0h0-n0p0"]', 20, "[measure]: queues: 'p0s0h0-n0p0' is a host port"),
    ('seconds = 10', 'seconds = 10\nseconds = 11', 13, "not valid TOML"),
    ('[measure]', '[measure', 18, "not valid TOML"),
]


@pytest.mark.parametrize("old,new,line,message", BAD, ids=[b[3][:40] for b in BAD])
def test_a_bad_file_names_its_line_and_key(tmp_path, old, new, line, message):
    assert old in EXAMPLE
    path = write(tmp_path, EXAMPLE.replace(old, new, 1))
    with pytest.raises(ParamError) as e:
        check.load(path)
    text = str(e.value)
    assert text.startswith(f"{path}:{line}: ") and message in text and "\n" not in text, text


def test_missing_tables_and_keys(tmp_path):
    for text, message in [("name = 'x'\n", "top level: fabric is required"),
                          ("[fabric]\nfamily = 'hpn'\n", "at least one [[traffic]] or [[job]] is required"),
                          ("[fabric]\nfamily = 'hpn'\n[traffic]\nkind = 'iperf3'\n",
                           "traffic: expected list"),
                          ("[fabric]\nnics = 2\n[[traffic]]\nkind = 'moe'\n", "[fabric]: family is required"),
                          ("[fabric]\nfamily = 'hpn'\n[[traffic]]\nkind = 'pipeline'\n",
                           "stages is required")]:
        with pytest.raises(ParamError, match=".*" + message.replace("[", "\\[").replace("]", "\\]")):
            check.load(write(tmp_path, text))
    with pytest.raises(ParamError, match="No such file"):
        check.load(str(tmp_path / "absent.toml"))


def test_collectives_are_checked_by_the_model(tmp_path):
    base = "[fabric]\nfamily = 'mpft'\n[[traffic]]\n"
    spec = check.load(write(tmp_path, base + "kind = 'moe'\nm = 3\ntokens = 2\n"))
    assert spec.traffic[0].m == 3 and spec.throughput == ()
    with pytest.raises(ParamError, match="x.toml:3: \\[\\[traffic\\]\\] 1: M=9"):
        check.load(write(tmp_path, base + "kind = 'moe'\nm = 9\n"))
    with pytest.raises(ParamError, match="no host 'zz'"):
        check.load(write(tmp_path, base + "kind = 'allreduce'\nhosts = ['g0h0', 'zz']\n"))
    spec = check.load(write(tmp_path, base + "kind = 'pipeline'\nstages = [['g0h0'], ['g1h0']]\n"))
    assert spec.traffic[0].stages == (("g0h0",), ("g1h0",))


def test_switch_faults_and_flaps(tmp_path):
    text = EXAMPLE.replace('kind = "link-down"', 'kind = "switch-down"').replace(
        'port = "p0s0h0-n0p0"', 'switch = "p0s0r0t0"')
    assert check.load(write(tmp_path, text)).faults[0].target == "p0s0r0t0"
    flap = EXAMPLE.replace('kind = "link-down"', 'kind = "flap"')
    flap = flap.replace("for = 3.0", "count = 2\nperiod = 1.0\ndown = 1.5")
    with pytest.raises(ParamError, match=":19: \\[\\[fault\\]\\] 1: down: 1.5: must be shorter than period"):
        check.load(write(tmp_path, flap))


# ---- phases ----

def fault(kind, at, seconds=0.0, count=1, period=1.0):
    args = {"port": "p", "count": count, "period": period, "down": 0.5} if kind == "flap" else {"port": "p"}
    return Fault(kind, at, "[[fault]] 1", tuple(args.items()), seconds=seconds)


def test_phases_before_each_fault_and_after():
    spans = phases.phases([fault("link-down", 4.0, 3.0)], warm=1.5, settle=0.5, end=10.0)
    assert spans == [("before", 1.5, 4.0), ("fault 1 (link-down p)", 4.5, 7.0), ("after", 7.5, 10.0)]
    flaps = phases.phases([fault("flap", 2.0, count=3), fault("link-down", 6.0, 1.0)], 1.0, 0.5, 9.0)
    assert [s[1:] for s in flaps] == [(1.0, 2.0), (2.0, 5.0), (6.5, 7.0), (7.5, 9.0)]
    assert phases.phases([], 1.0, 0.5, 5.0) == [("before", 1.0, 5.0)]


def test_means_are_time_weighted_and_losses_relative_to_before():
    series = [[0.0, 0.0], [1.0, 60.0], [2.0, 60.0], [3.0, 50.0], [4.0, 50.0], [5.0, 60.0]]
    assert phases.mean_in(series, 0.0, 2.0) == 60.0           # each point is the rate up to its time
    assert phases.mean_in(series, 1.5, 2.5) == 55.0
    assert phases.mean_in(series, 7.0, 8.0) is None
    means = phases.phase_means(series, [("before", 0.0, 2.0), ("fault 1", 2.0, 4.0), ("after", 4.0, 5.0)])
    assert means == {"before": 60.0, "fault 1": 50.0, "after": 60.0}
    assert phases.losses(means) == {"fault 1": 0.1667}
    assert phases.losses({"before": 0.0, "fault 1": 1.0}) == {"fault 1": None}


# ---- start/stop, UDP, expect clauses, probes ----

def test_start_stop_and_udp(tmp_path):
    text = EXAMPLE.replace("seconds = 10", 'start = 1.0\nstop = 11.0\nprotocol = "udp"\nrate_mbit = 3')
    text = text.replace("at = 4.0", "at = 3.0")
    spec = check.load(write(tmp_path, text))
    (t,) = spec.traffic
    assert (t.start, t.length, t.end, t.protocol, t.rate_mbit) == (1.0, 10.0, 11.0, "udp", 3.0)
    assert spec.first_start == 1.0 and spec.planned == 11.0
    with pytest.raises(ParamError, match="inside the warm-up .*starts at 1 s"):
        check.load(write(tmp_path, text.replace("at = 3.0", "at = 2.0")))


def test_expect_clauses_are_read_and_judged(tmp_path):
    from testbed.experiments import expect
    clauses = ('\n[[expect]]\nmeasure = "loss"\nmin = 0.1\nmax = 0.25\n'
               '\n[[expect]]\nmeasure = "rtt"\nfrom = "p0s0h0-n1"\nto = "p0s0h1-n1"\nmax = 5\n'
               '\n[[expect]]\nmeasure = "failover_gap"\nfrom = "p0s0h0-n0"\nto = "p0s0h1-n0"\nmax = 500\n')
    spec = check.load(write(tmp_path, EXAMPLE + clauses))
    loss = spec.expects[0]
    assert (loss.of, loss.phase, loss.low, loss.high) == ("p0s0h0", "fault 1", 0.1, 0.25)
    assert spec.rtt == (("p0s0h0-n1", "p0s0h1-n1"),) and spec.gaps == (("p0s0h0-n0", "p0s0h1-n0"),)
    assert loss.label == "loss p0s0h0 fault 1 >= 0.1 and <= 0.25"
    figures = {"throughput": {"p0s0h0": {"losses": {"fault 1 (link-down p0s0h0-n0p0)": 0.17}}},
               "rtt": {"p0s0h0-n1 -> p0s0h1-n1": {"phases_ms": {"before": 7.5}}},
               "failover_gap": {"p0s0h0-n0 -> p0s0h1-n0": {"longest_gap_ms": 40.0}}, "traffic": []}
    judged = expect.judge(spec.expects, figures)
    assert [(c["value"], c["held"]) for c in judged] == [(0.17, True), (7.5, False), (40.0, True)]
    assert not expect.held(loss, None) and not expect.held(loss, float("nan"))


def test_the_verdict_follows_the_clauses(tmp_path):
    from testbed.experiments.runner import Experiment
    spec = check.load(write(tmp_path, EXAMPLE + '\n[[expect]]\nmeasure = "loss"\nmin = 0.1\n'))
    base = {"throughput": {}, "queues": {}, "traffic_s": 10, "cpu_busy": 0.2}
    held = {**base, "expect": [{"expect": "x", "value": 0.2, "held": True}]}
    off = {**base, "expect": [{"expect": "x", "value": 0.05, "held": False}]}
    assert Experiment(spec).judge(held).verdict == "reproduced"
    assert Experiment(spec).judge(off).verdict == "not reproduced"
    assert Experiment(spec).judge({**off, "cpu_busy": 0.99}).verdict == "invalid"
    assert Experiment(spec).judge(base).verdict == "measured"


def test_rtt_samples_from_ping():
    from testbed.experiments.probes import rtt_samples
    out = ("PING 10.0.1.2 (10.0.1.2) from 10.0.0.1 : 56(84) bytes of data.\n"
           "[1000.500000] 64 bytes from 10.0.1.2: icmp_seq=1 ttl=62 time=0.412 ms\n"
           "[1000.600000] 64 bytes from 10.0.1.2: icmp_seq=2 ttl=62 time=12.5 ms\n")
    assert rtt_samples(out, 1000.0) == [[0.5, 0.412], [0.6, 12.5]]


def test_busbw_is_a_collectives(tmp_path):
    from testbed.experiments import expect
    text = (ROOT / "experiments" / "tor-down-allreduce.toml").read_text()
    spec = check.load(write(tmp_path, text + '\n[[expect]]\nmeasure = "busbw"\ntraffic = 1\nmin = 1\n'))
    figures = {"traffic": [{"where": "[[traffic]] 1", "busbw_mbit": 3.5}]}
    assert expect.judge(spec.expects, figures)[0] | {"expect": ""} == {
        "expect": "", "where": "[[expect]] 1", "value": 3.5, "held": True}
    with pytest.raises(ParamError, match="traffic: 2: must be between 1 and 1"):
        check.load(write(tmp_path, text + '\n[[expect]]\nmeasure = "busbw"\ntraffic = 2\nmin = 1\n'))


def rose_figures(loss: float) -> dict:
    """A run whose watched host carried `loss` less (negative: more) during its fault."""
    phase = "fault 1 (link-down p0s0h0-n0p0)"
    item = {"what": "host", "direction": "sent", "loss": loss, "losses": {phase: loss},
            "phases_mbps": {"before": 2.6, phase: round(2.6 * (1 - loss), 2), "after": 2.6},
            "other_direction": {}}
    return {"throughput": {"p0s0h0": item}, "queues": {}, "traffic_s": 10, "cpu_busy": 0.2,
            "expect": [{"expect": "loss p0s0h0 fault 1 <= 0.5", "value": loss, "held": True}]}


def test_a_rate_that_rose_during_a_fault_is_warned_of(tmp_path):
    """Two cross-pod flows are held by the 15:1 core, not the NIC: a link-down of the NIC lets
    the rate rise (2.6 to 3.96 Mbit/s), and a `max` on the loss holds though the fault did not bite."""
    from testbed.experiments.runner import Experiment
    spec = check.load(write(tmp_path, EXAMPLE + '\n[[expect]]\nmeasure = "loss"\nmax = 0.5\n'))
    result = Experiment(spec).report(rose_figures(-0.523))
    assert result.measured.startswith("WARNING: p0s0h0 rose 52% above its before rate during fault 1 "
                                      "(link-down p0s0h0-n0p0): the fault did not limit it")
    assert len(result.figures["warnings"]) == 1 and "WARNING" in result.headline
    for quiet in (-0.04, 0.0, 0.17):        # within 5% of its rate, or a real loss: no warning
        result = Experiment(spec).report(rose_figures(quiet))
        assert "WARNING" not in result.measured + result.headline and "warnings" not in result.figures


def test_the_report_names_the_experiment_and_its_file_not_a_paper(tmp_path):
    from rich.console import Console

    from testbed.cli.runs import print_result
    from testbed.experiments.runner import Experiment
    path = write(tmp_path, EXAMPLE.replace('name = "nic0-link-down"',
                                           'name = "mine"\ndescription = "NIC 0 loses a link"'))
    experiment = Experiment(check.load(path))
    result = experiment.report(rose_figures(0.17))
    con = Console(record=True, width=200)
    print_result(con, result)
    text = con.export_text()
    assert f"experiment: NIC 0 loses a link ({path})" in text and "paper:" not in text


def test_every_measure_has_its_bounds():
    from testbed.experiments import expect
    assert set(expect.LIMITS) == set(expect.MEASURES)
    assert all(low == 0.0 for low, _, _ in expect.LIMITS.values()) and expect.LIMITS["loss"][1] == 1.0
