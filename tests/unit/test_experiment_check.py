"""`hpn-testbed run FILE.toml --check` and the published schema (docs/experiment.schema.json):
every example in experiments/ is valid to both; each malformed file below gives one line and exit
status 2, prints nothing on stdout and creates nothing; the schema rejects the malformed files
whose fault is in their shape (types, keys, ranges) and accepts those only the fabric model can
judge (names, timing, what a family lacks), so the two stay in step. As an unprivileged user
`--check` works the same."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from testbed.cli import main
from testbed.experiments.spec import parse

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "experiment.schema.json").read_text())
EXAMPLES = sorted((ROOT / "experiments").glob("*.toml"))
BASE = (ROOT / "experiments" / "nic0-link-down.toml").read_text()
CLOS = """[fabric]
family = "clos3"
[routing]
ROUTING
[[traffic]]
kind = "iperf3"
from = "p0e0h0"
to = "p0e1h0"
"""
EXPECT = '\n[[expect]]\nmeasure = "loss"\nmin = 0.1\n'
COLLECTIVE = '[[traffic]]\nkind = "allreduce"\nhosts = ["p0s0h0", "p0s0h1"]\n'


def edit(old: str, new: str, text: str = BASE) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# (id, the file's text (bytes: as written), what the one line says, the schema rejects it too)
MALFORMED = [
    ("not UTF-8", BASE.encode().replace(b"nic0", b"nic\xff0", 1), "not UTF-8 text", None),
    ("not TOML", edit("[measure]", "[measure"), "not valid TOML", None),
    ("100 s fault on 10 s of traffic beside a collective",
     edit("[[fault]]", COLLECTIVE + "[[fault]]", edit("for = 3.0", "for = 100.0")),
     "after the traffic (10 s", False),
    ("detector on clos3", CLOS.replace("ROUTING", "detector = true"), "detector: the detector watches",
     False),
    ("per-port core on clos3", CLOS.replace("ROUTING", 'core = "per-port"'), "per-port core rules are HPN's",
     False),
    ("an unknown table", BASE + "[faults]\nat = 1\n", "top level: faults: unknown key", True),
    ("no traffic", "[fabric]\nfamily = 'hpn'\n", "at least one [[traffic]] or [[job]] is required", True),
    ("no family", edit('family = "hpn"\n', ""), "family is required", True),
    ("an unknown traffic kind", edit('kind = "iperf3"', 'kind = "ftp"'), "'ftp': choose from", True),
    ("streams as a string", edit("streams = 4", 'streams = "4"'), "expected int", True),
    ("no streams", edit("streams = 4", "streams = 0"), "must be between 1 and 64", True),
    ("udp without a rate", edit("streams = 4", 'streams = 4\nprotocol = "udp"'), "udp needs rate_mbit", True),
    ("stop before start", edit("seconds = 10", "start = 5.0\nstop = 5.5"), "at least 1 s after start", False),
    ("stop and seconds disagree", edit("seconds = 10", "seconds = 10\nstop = 8"), "disagrees with", False),
    ("stop on a collective", BASE.replace("[[fault]]", COLLECTIVE + "stop = 3\n[[fault]]"),
     "stop: not a key of allreduce traffic", True),
    ("an unknown fault key", edit("for = 3.0", "four = 3.0"), "four: unknown key", True),
    ("a flap with for", edit('kind = "link-down"', 'kind = "flap"'), "for: not a key of a flap fault", True),
    ("a link-down with a direction", edit("for = 3.0", 'for = 3.0\ndirection = "up"'),
     "direction: not a key of a link-down fault", True),
    ("a fault in the warm-up", edit("at = 4.0", "at = 0.5"), "inside the warm-up", False),
    ("no such fabric parameter", edit("nics = 3", "nosuch = 3"), "unknown parameter 'nosuch'", False),
    ("no NIC", edit("nics = 3", "nics = 0"), "nics=0: must be between 1 and 256", False),
    ("no such host", edit('to = "p0s0h1"', 'to = "p9s0h1"'), "no host or NIC 'p9s0h1'", False),
    ("a queue on a host port", edit("queues = []", 'queues = ["p0s0h0-n0p0"]'), "is a host port", False),
    ("an rtt pair on one host", BASE + 'rtt = [["p0s0h0-n0", "p0s0h0-n1"]]\n', "a probe crosses the fabric",
     False),
    ("an rtt probe of no NIC", BASE + 'rtt = [["p0s0h0-n0", "p0s0h1-n7"]]\n', "no NIC 'p0s0h1-n7'", False),
    ("an expectation without a bound", BASE + '\n[[expect]]\nmeasure = "loss"\n', "a bound is required",
     True),
    ("an unknown measure", BASE + EXPECT.replace('"loss"', '"jitter"'), "'jitter': choose from", True),
    ("a phase that is no phase", BASE + EXPECT + 'phase = "during"\n', "before, after or fault N", True),
    ("a loss before the fault", BASE + EXPECT + 'phase = "before"\n', "a loss is measured during a fault",
     False),
    ("a second fault that is not there", BASE + EXPECT + 'phase = "fault 2"\n', "has 1 [[fault]] table",
     False),
    ("a loss of something not watched", BASE + EXPECT + 'of = "p0s0h1"\n',
     "is not under [measure] throughput",
     False),
    ("busbw of iperf3", BASE + '\n[[expect]]\nmeasure = "busbw"\ntraffic = 1\nmax = 5\n',
     "busbw is a collective's", False),
    ("an rtt key on a loss", BASE + EXPECT + 'from = "p0s0h0-n0"\n', "from: not a key of a loss expectation",
     True),
    ("min above max", BASE + EXPECT + "max = 0.05\n", "is below min", False),
    ("a negative loss bound", BASE + '\n[[expect]]\nmeasure = "loss"\nmax = -1\n',
     "max: -1: a loss is a fraction of the before rate, from 0 to 1", True),
    ("a loss above all of the rate", BASE + '\n[[expect]]\nmeasure = "loss"\nmin = 1.5\n',
     "min: 1.5: a loss is a fraction", True),
    ("a negative throughput", BASE + '\n[[expect]]\nmeasure = "throughput"\nmin = -2\n',
     "min: -2: a throughput cannot be negative", True),
    ("a negative RTT", BASE + '\n[[expect]]\nmeasure = "rtt"\nfrom = "p0s0h0-n0"\nto = "p0s0h1-n0"\n'
     'max = -0.5\n', "max: -0.5: an RTT cannot be negative", True),
    # testbed/experiments/limits.py
    ("a throughput item twice", edit('throughput = ["p0s0h0"]', 'throughput = ["p0s0h0", "p0s0h0"]'),
     "throughput: 'p0s0h0' is listed twice", False),
    ("the same link-down twice at once", BASE + '[[fault]]\nat = 5.0\nkind = "link-down"\n'
     'port = "p0s0h0-n0p0"\nfor = 1.0\n', "[[fault]] 2: at: link-down p0s0h0-n0p0 from 5 s overlaps", False),
    ("a bidi override in the name", edit('name = "nic0-link-down"', 'name = "nic0-\u202egnp.exe"'),
     "U+202E", False),
    ("a bidi override in the description", edit('name = "nic0-link-down"',
                                                'name = "x"\ndescription = "safe \u202e txet"'),
     "description: holds U+202E (RIGHT-TO-LEFT OVERRIDE)", False),
]


def write(tmp_path, content) -> Path:
    path = tmp_path / "bad.toml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def schema_errors(path: Path) -> list[str]:
    data, _ = parse(str(path))
    return [e.message for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(data)]


def test_the_schema_is_a_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_at_least_twenty_malformed_files():
    assert len(MALFORMED) >= 20 and len({m[0] for m in MALFORMED}) == len(MALFORMED)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_is_valid_to_the_schema_and_the_checker(path, capsys):
    assert schema_errors(path) == []
    assert main(["run", str(path), "--check"]) == 0
    out, err = capsys.readouterr()
    assert out == f"{path}: " + out.split(": ", 1)[1] and len(out.splitlines()) == 1 and "valid" in out
    assert err == ""


@pytest.mark.parametrize("why,content,message,schema", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_file_is_one_line_and_exit_2(why, content, message, schema, tmp_path, capsys,
                                                 monkeypatch):
    path = write(tmp_path, content)
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    assert main(["run", str(path), "--check", "--out", str(tmp_path / "out")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1, err
    assert err.startswith("hpn-testbed: ") and str(path) in err and message in err, err
    assert sorted(os.listdir(tmp_path)) == before          # no out/, nothing else
    if schema is not None:
        assert bool(schema_errors(path)) == schema, (why, schema_errors(path))


def test_check_json_is_the_envelope_and_nothing_else(tmp_path, capsys):
    """`--check --json`: one JSON document on stdout (the envelope of every command), listing each
    file; a bad file is an entry with valid false and its one line, also on stderr; exit 2."""
    assert main(["run", *map(str, EXAMPLES), "--check", "--json"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert (doc["command"], doc["ok"], err) == ("run", True, "")
    assert [f["file"] for f in doc["result"]] == [str(p) for p in EXAMPLES]
    assert all(f["valid"] and f["family"] and f["traffic"] >= 1 for f in doc["result"])
    bad = str(write(tmp_path, edit("nics = 3", "nics = 0")))
    assert main(["run", str(EXAMPLES[0]), bad, "--check", "--json"]) == 2
    out, err = capsys.readouterr()
    doc = json.loads(out)
    good, wrong = doc["result"]
    assert good["file"] == str(EXAMPLES[0]) and good["valid"] and good["family"]
    assert wrong["file"] == bad and not wrong["valid"]
    assert "nics=0: must be between 1 and 256" in wrong["error"]
    assert err.splitlines() == [f"hpn-testbed: {wrong['error']}"]


def test_check_lists_every_file_and_exits_2_if_one_is_bad(tmp_path, capsys):
    """Without --json: the good file's line on stdout, the bad one's on stderr, whatever the order."""
    bad = str(write(tmp_path, edit("nics = 3", "nics = 0")))
    assert main(["run", bad, str(EXAMPLES[0]), "--check"]) == 2
    out, err = capsys.readouterr()
    assert out.startswith(f"{EXAMPLES[0]}: valid (") and len(out.splitlines()) == 1
    assert err.startswith(f"hpn-testbed: {bad}") and len(err.splitlines()) == 1


def test_check_refuses_scenarios_and_an_empty_list(capsys):
    assert main(["run", "hash-polarization", "--check"]) == 2
    assert main(["run", "--check"]) == 2
    assert "is not one" in capsys.readouterr().err


def test_check_as_an_unprivileged_user(as_nobody):
    """The examples and a bad file, checked by `nobody` (when the tests run as root). The bad
    file sits in a directory nobody can reach (pytest's tmp_path is under a 0700 directory: the
    check would then fail on the read, not on the file), and its one line names its problem."""
    with tempfile.TemporaryDirectory(prefix="hpn-check-") as tmp:
        os.chmod(tmp, 0o755)
        bad = write(Path(tmp), edit("nics = 3", "nics = 0"))
        os.chmod(bad, 0o644)
        env = {**os.environ, "HOME": tmp, "PYTHONDONTWRITEBYTECODE": "1"}
        run = [*as_nobody, sys.executable, "-m", "testbed", "run"]
        good = subprocess.run([*run, *map(str, EXAMPLES), "--check"], capture_output=True, text=True,
                              cwd=tmp, env=env, timeout=120, check=False)
        assert good.returncode == 0 and len(good.stdout.splitlines()) == len(EXAMPLES), good.stderr
        proc = subprocess.run([*run, str(bad), "--check"], capture_output=True, text=True, cwd=tmp, env=env,
                              timeout=120, check=False)
        assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
        assert "nics=0: must be between 1 and 256" in proc.stderr
        assert sorted(os.listdir(tmp)) == ["bad.toml"]


def every_pair() -> str:
    """Every NIC pair across hosts of the example's fabric (4 hosts of 3 NICs: 108)."""
    nics = [f"p{p}s0h{h}-n{n}" for p in range(2) for h in range(2) for n in range(3)]
    return ", ".join(f'["{a}", "{b}"]' for a in nics for b in nics if a[:6] != b[:6])


@pytest.mark.parametrize("key,cap", [("rtt", "at most 64"), ("failover_gap", "(4 per core, 2 cores here)")])
def test_more_probes_than_the_machine_runs_are_refused(key, cap, tmp_path, capsys, monkeypatch):
    from testbed.experiments import limits
    monkeypatch.setattr(limits.os, "sched_getaffinity", lambda pid: {0, 1})
    path = write(tmp_path, BASE + f"{key} = [{every_pair()}]\n")
    assert main(["run", str(path), "--check"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"{key}: 108 NIC pairs" in err and cap in err, err
    few = write(tmp_path, BASE + f'{key} = [["p0s0h0-n0", "p0s0h1-n0"], ["p0s0h1-n0", "p0s0h0-n0"]]\n')
    assert main(["run", str(few), "--check"]) == 0
