"""The traffic registry, walked: the experiment files' [[traffic]] tables offer exactly the
registered kinds (a missing or unknown `kind` lists them), each kind reads and checks its own
keys, the published schema and docs/experiments.md's table are the registry's, and the run plays
each item through its kind's runner. A kind defined here, registered with one call, is then
accepted by `run FILE.toml --check`, listed among the kinds and run by the experiment's Load; a
malformed one is refused with one line."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from testbed.cli import main
from testbed.core.errors import ParamError
from testbed.experiments import check, traffic
from testbed.experiments.traffic.kind import NAMES, Run, Traffic, key
from testbed.experiments.traffic.load import Load

ROOT = Path(__file__).resolve().parents[2]
HEAD = "[fabric]\nfamily = 'hpn'\nnics = 2\n[[traffic]]\n"


@dataclass(frozen=True, kw_only=True)
class Chatter(Traffic):
    """A throwaway kind: pings among some hosts for a set time (its runner only records)."""
    kind, help = "chatter", "pings among hosts for a set time"
    hosts: tuple[str, ...] = key(NAMES, "the hosts that chatter", ("p0s0h0", "p0s0h1"))
    seconds: float = key(float, "s it lasts", 5.0, bounds=(1.0, 60.0))
    calls: ClassVar[list] = []

    def check(self, fab, fail) -> None:
        for name in self.hosts:
            if name not in fab.hosts:
                fail("hosts", f"no host {name!r} in this {fab.family} fabric")

    @property
    def length(self) -> float:
        return self.seconds

    def watched(self) -> tuple[str, ...]:
        return self.hosts[:1]

    def runner(self, emu, n: int) -> Run:
        return Recorded(self, n)


class Recorded(Run):
    def __init__(self, t, n):
        self.t, self.n = t, n

    def prepare(self):
        Chatter.calls.append(("prepare", self.n))

    def begin(self):
        Chatter.calls.append(("begin", self.n))

    def wait(self):
        return [{"where": self.t.where, "n": self.n}]


@pytest.fixture
def chatter():
    kind = traffic.register(Chatter)
    Chatter.calls.clear()
    yield kind
    traffic.unregister(kind.kind)


def write(tmp_path, text: str) -> str:
    path = tmp_path / "t.toml"
    path.write_text(text)
    return str(path)


def test_the_published_schema_and_the_docs_are_the_registrys():
    """docs/experiment.schema.json's $defs.traffic is traffic.schema(), and docs/experiments.md
    has each kind's row (Kind.doc()): rewrite them from the registry when a kind is added."""
    schema = json.loads((ROOT / "docs" / "experiment.schema.json").read_text())
    assert schema["$defs"]["traffic"] == traffic.schema()
    doc = (ROOT / "docs" / "experiments.md").read_text()
    for kind in traffic.kinds():
        assert kind.doc() in doc, kind.kind
    assert 'kind = "iperf3"' in doc


@pytest.mark.parametrize("text,message", [
    ("from = 'p0s0h0'\nto = 'p0s0h1'\n", "kind is required: one of iperf3, allreduce, reduce-scatter"),
    ("kind = 'ftp'\n", "kind: 'ftp': choose from iperf3, allreduce, reduce-scatter, all-gather, "
                       "all-to-all, moe, pipeline"),
    ("kind = 'moe'\nsize = 5\n",
     "size: not a key of moe traffic; known: kind, start, pace, hosts, tokens, m"),
    ("kind = 'pipeline'\nhosts = ['p0s0h0']\n", "hosts: not a key of pipeline traffic"),
    ("kind = 'pipeline'\nstages = [['p0s0h0'], 'p0s0h1']\n", "stages: expected a list of lists of names"),
    ("kind = 'allreduce'\nhosts = 'p0s0h0'\n", "hosts: expected list"),
    ("kind = 'iperf3'\nfrom = 'p0s0h0'\n", "to is required: the receiving host or NIC"),
])
def test_a_traffic_table_is_read_by_its_kind_in_one_line(tmp_path, text, message):
    with pytest.raises(ParamError) as e:
        check.load(write(tmp_path, HEAD + text))
    assert message in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_a_kind_registered_with_one_call_is_accepted_and_listed(tmp_path, chatter, capsys):
    path = write(tmp_path, HEAD + "kind = 'chatter'\nseconds = 8\n[[fault]]\nat = 3.0\n"
                                  "kind = 'link-down'\nport = 'p0s0h0-n0p0'\nfor = 2.0\n")
    assert main(["run", path, "--check"]) == 0
    capsys.readouterr()
    spec = check.load(path)
    (t,) = spec.traffic
    assert (t.kind, t.hosts, t.seconds, t.end) == ("chatter", ("p0s0h0", "p0s0h1"), 8.0, 8.0)
    assert spec.throughput == ("p0s0h0",) and spec.planned == 8.0
    assert main(["run", write(tmp_path, HEAD + "kind = 'ftp'\n"), "--check"]) == 2
    assert "choose from iperf3, " in (err := capsys.readouterr().err) and ", chatter" in err
    for bad, why in [("seconds = 99", "seconds: 99.0: must be between 1.0 and 60.0"),
                     ("hosts = ['p0s0h9']", "hosts: no host 'p0s0h9' in this hpn fabric"),
                     ("streams = 2", "streams: not a key of chatter traffic; known: kind, start, hosts")]:
        assert main(["run", write(tmp_path, HEAD + f"kind = 'chatter'\n{bad}\n"), "--check"]) == 2
        assert why in capsys.readouterr().err, why
    # the fault must end within its length: the kind's own length sets the file's timing
    with pytest.raises(ParamError, match="after the traffic \\(5 s; chatter sets the length\\)"):
        check.load(write(tmp_path, HEAD + "kind = 'chatter'\n[[fault]]\nat = 4.0\nkind = 'link-down'\n"
                                          "port = 'p0s0h0-n0p0'\nfor = 2.0\n"))


class FakeTimeline:
    def __init__(self):
        self.actions = []

    def action(self, at, action):
        self.actions.append((at, action))


def test_the_run_plays_every_item_through_its_kinds_runner(tmp_path, chatter):
    spec = check.load(write(tmp_path, HEAD + "kind = 'chatter'\nstart = 2.0\n"
                                             "[[traffic]]\nkind = 'chatter'\n"))
    load = Load(emu=None, spec=spec)
    load.servers()
    timeline = load.schedule(FakeTimeline())
    assert [at for at, _ in timeline.actions] == [2.0, 0.0]
    for _, action in sorted(timeline.actions, key=lambda a: a[0]):
        action()
    assert Chatter.calls == [("prepare", 0), ("prepare", 1), ("begin", 1), ("begin", 0)]
    assert load.wait() == [{"where": "[[traffic]] 1", "n": 0}, {"where": "[[traffic]] 2", "n": 1}]


@dataclass(frozen=True, kw_only=True)
class Good(Traffic):
    kind, help = "good-kind", "a kind as it should be"
    seconds: float = key(float, "s", 5.0, bounds=(1.0, 60.0))

    def runner(self, emu, n):
        return Run()


def variant(dataclass_=True, **changes):
    cls = type("Variant", (Good,), {"__annotations__": {k: v[0] for k, v in changes.items() if
                                                        isinstance(v, tuple)},
                                    **{k: (v[1] if isinstance(v, tuple) else v) for k, v in changes.items()}})
    return dataclass(frozen=True, kw_only=True)(cls) if dataclass_ else cls


@pytest.mark.parametrize("kind,why", [
    (object, "not a frozen dataclass subclass of Traffic"),
    (variant(dataclass_=False), "not a frozen dataclass subclass of Traffic"),
    (variant(kind=""), "'' is not a lower-case word"),
    (variant(kind="Two Words"), "not a lower-case word"),
    (variant(kind="iperf3"), "'iperf3' is taken"),
    (variant(help="two\nlines"), "help must be one line"),
    (variant(runner=Traffic.runner), "no runner method"),
    (variant(extra=(int, 3)), "field extra is not declared with key()"),
    (variant(n=(int, key(list, "n", 1))), "key n: type must be"),
    (variant(n=(int, key(int, "", 1))), "key n: no help"),
    (variant(n=(str, key(str, "n", "a", bounds=(1, 5)))), "key n: bounds are"),
    (variant(n=(int, key(int, "n", 0, bounds=(1, 5)))), "key n: its default 0 is outside"),
    (variant(n=(int, key(int, "n", 1, toml="kind"))), "key kind: a lower-case identifier, not kind"),
], ids=lambda x: x if isinstance(x, str) else None)
def test_a_malformed_kind_is_refused_in_one_line(kind, why):
    before = traffic.names()
    with pytest.raises(ParamError) as e:
        traffic.register(kind)
    assert why in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert traffic.names() == before


def test_a_good_kind_is_accepted_and_unregistered():
    traffic.register(Good)
    try:
        assert "good-kind" in traffic.names() and traffic.get("good-kind") is Good
    finally:
        traffic.unregister("good-kind")
    with pytest.raises(ParamError, match="no traffic kind 'good-kind'; known: iperf3, allreduce"):
        traffic.get("good-kind")
