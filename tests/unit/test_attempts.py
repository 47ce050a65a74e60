"""A run that was invalid for want of CPU is run again (at most --retries more times), every
attempt kept; the closing line and exit status tell a busy machine from a refuted claim."""
from dataclasses import dataclass, field

from testbed.cli import attempts


@dataclass
class R:
    verdict: str
    headline: str = ""
    figures: dict = field(default_factory=dict)


def runs(*verdicts):
    pending = [R(v, headline=f"h{i}") for i, v in enumerate(verdicts)]
    made = []

    def execute():
        made.append(pending[len(made)])
        return made[-1]
    return execute, made


def test_a_valid_first_run_is_not_retried():
    execute, made = runs("reproduced", "reproduced")
    result = attempts.until_valid(execute, 2)
    assert result.verdict == "reproduced" and len(made) == 1 and "attempts" not in result.figures


def test_an_invalid_run_is_retried_and_the_verdict_comes_from_the_valid_one():
    execute, made = runs("invalid", "not reproduced", "reproduced")
    told, waited = [], []
    result = attempts.until_valid(execute, 2, lambda k, r: told.append(k), lambda: waited.append(1))
    assert result.verdict == "not reproduced" and len(made) == 2
    assert told == [1] and waited == [1]
    assert result.figures["attempts"] == [{"verdict": "invalid", "headline": "h0"},
                                          {"verdict": "not reproduced", "headline": "h1"}]


def test_retries_stop_at_the_limit_and_zero_means_never():
    execute, made = runs("invalid", "invalid", "invalid", "reproduced")
    assert attempts.until_valid(execute, 2).verdict == "invalid" and len(made) == 3
    execute, made = runs("invalid", "reproduced")
    assert attempts.until_valid(execute, 0).verdict == "invalid" and len(made) == 1


def test_a_run_that_lost_a_part_is_not_retried():
    lost = R("invalid", figures={"lost": "ovs-vswitchd died"})
    calls = []
    assert attempts.until_valid(lambda: calls.append(1) or lost, 3) is lost and calls == [1]


def test_exit_status_tells_a_busy_machine_from_a_refuted_claim():
    assert attempts.exit_status([R("reproduced"), R("measured")]) == attempts.EXIT_OK == 0
    assert attempts.exit_status([R("reproduced"), R("invalid")]) == attempts.EXIT_INVALID == 3
    assert attempts.exit_status([R("invalid"), R("not reproduced")]) == attempts.EXIT_REFUTED == 1
    assert attempts.exit_status([R("reproduced"), R("invalid", figures={"lost": "x"})]) == 1
    assert attempts.EXIT_USAGE == 2


def test_the_closing_line_says_why_and_that_nothing_was_refuted():
    busy = R("invalid", figures={"attempts": [{}, {}, {}]})
    line = attempts.closing([R("reproduced")] * 8 + [busy] * 5)
    assert line.startswith("8 reproduced, 5 invalid (5 because the machine was too busy")
    assert "5 retried" in line and "no claim was refuted" in line
    assert attempts.exit_status([R("reproduced")] * 8 + [busy] * 5) == 3    # README: "3 | ... too busy"
    line = attempts.closing([R("reproduced"), R("not reproduced"), R("invalid", figures={"lost": "x"})])
    assert "lost a part" in line and line.endswith("1 not reproduced")
    assert attempts.closing([R("reproduced")] * 3) == "3 reproduced"


def test_cpu_pressure_reads_psi_and_the_wait_is_bounded(tmp_path):
    psi = tmp_path / "cpu"
    psi.write_text("some avg10=85.00 avg60=70.00 avg300=10.00 total=1\n"
                   "full avg10=0.00 avg60=0 avg300=0 total=0\n")
    assert attempts.cpu_pressure(str(psi)) == 0.85
    assert attempts.cpu_pressure(str(tmp_path / "none")) is None
    clock = [0.0]
    readings = iter([0.9, 0.8, 0.2])
    last = attempts.wait_for_quiet(lambda s: clock.__setitem__(0, clock[0] + s), lambda: clock[0],
                                   lambda: next(readings))
    assert last == 0.2 and clock[0] == 2.0
    clock[0] = 0.0
    last = attempts.wait_for_quiet(lambda s: clock.__setitem__(0, clock[0] + s), lambda: clock[0],
                                   lambda: 0.99, limit=5)
    assert last == 0.99 and clock[0] == 5.0
