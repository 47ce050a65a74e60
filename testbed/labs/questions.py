"""A lab's questions, read from its key, labs/instructor/NN-name/questions.toml (apart from what
students see), and checked before any answer is.

    title = "Dual-ToR: a link, then a ToR"
    minutes = 75
    [[question]]
    id = "loss_3"                      # the key in the student's answers.toml
    ask = "Measured: the busy host's loss with nics=3 (a fraction)"
    source = "nics3/dual-tor-link-failure"   # RESULT under the results directory (see results.py)
    value = "figures.dual_tor.loss"    # a path into it (see expr.py) ...
    # ... or an expression over named paths:
    # vars = { nics = "figures.dual_tor.nics" }
    # expect = "1 / (2 * nics)"
    tolerance = 0.03                   # absolute; or relative = 0.1; 0 for an exact answer
    hint = "what to look at again when the answer is off"
    run = "sudo hpn-testbed run ... --out out/nics3"   # what writes the source (said when it is missing)
    optional = true                    # going further: a blank or a missing run does not fail
    reading = true                     # a reading question: answered from a table or trace the
                                       # sheet shows, not from a figure the student's run measured
    params = { "figures.dual_tor.nics" = 3 }   # what the question assumes of its run: when the
                                       # run differs and the answer is off, the hint says so

`kind = "choice"` with `choices = [...]` takes a word; the expression gives the right one.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from testbed.core import files
from testbed.core.errors import ParamError
from testbed.labs import expr

ID = re.compile(r"^[a-z][a-z0-9_]*$")
QUESTION_KEYS = {"id", "ask", "source", "value", "vars", "expect", "tolerance", "relative", "hint",
                 "run", "kind", "choices", "unit", "optional", "reading", "params"}


@dataclass(frozen=True)
class Question:
    id: str
    ask: str
    source: str
    expect: str                     # an expression over `vars`
    vars: dict = field(default_factory=dict)
    kind: str = "number"            # number | choice
    choices: tuple = ()
    tolerance: float = 0.0
    relative: float = 0.0
    hint: str = ""
    run: str = ""
    unit: str = ""
    optional: bool = False          # a "going further" question: blank or unmeasured does not fail
    reading: bool = False           # answered by reading a table or trace, not from a measurement
    params: dict = field(default_factory=dict)   # path in the run -> the value the question assumes

    def allowed(self, measured: float) -> float:
        """The largest distance from `measured` an answer may have and still pass."""
        return max(self.tolerance, abs(measured) * self.relative)


@dataclass(frozen=True)
class Lab:
    number: int
    name: str                       # the directory, e.g. 03-dual-tor
    title: str
    minutes: int
    directory: Path                 # what students see: the sheet and the blank answers
    questions: tuple
    key: Path | None = None         # the grading key (questions.toml), None where it is absent

    @property
    def sheet(self) -> Path:
        return self.directory / "README.md"

    def question(self, qid: str) -> Question | None:
        return next((q for q in self.questions if q.id == qid), None)


def load_lab(directory: Path, key_dir: Path | None = None) -> Lab:
    """The lab of sheet directory `directory`, its questions from `key_dir`/questions.toml (by
    default the same directory); a lab without a key has no questions (Lab.key None)."""
    path = (key_dir or directory) / "questions.toml"
    if not path.is_file():
        return Lab(int(directory.name[:2]), directory.name, directory.name, 60, directory, (), None)
    data, _ = files.load_toml(path, "lab questions", files.EXPERIMENT_MAX)
    questions = tuple(question(path, i, q) for i, q in enumerate(data.get("question", []), 1))
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        raise ParamError(f"{path}: question ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
    number = int(directory.name[:2])
    return Lab(number, directory.name, str(data.get("title", directory.name)), int(data.get("minutes", 60)),
               directory, questions, path)


def question(path: Path, index: int, q: dict) -> Question:
    where = f"{path}: question {index} ({q.get('id', 'no id')})"
    unknown = set(q) - QUESTION_KEYS
    if unknown:
        raise ParamError(f"{where}: unknown keys {sorted(unknown)}")
    for key in ("id", "ask", "source"):
        if not isinstance(q.get(key), str) or not q[key]:
            raise ParamError(f"{where}: needs {key} (a string)")
    if not ID.match(q["id"]):
        raise ParamError(f"{where}: id must be lower_case_with_underscores")
    if ("value" in q) == ("expect" in q):
        raise ParamError(f"{where}: needs exactly one of value (a path) or expect (an expression)")
    variables = dict(q.get("vars", {}))
    expect = q.get("expect", "value")
    if "value" in q:
        variables["value"] = q["value"]
    try:
        unbound = expr.names(expect) - set(variables)
    except (SyntaxError, ValueError) as e:
        raise ParamError(f"{where}: expect: {e}") from None
    if unbound:
        raise ParamError(f"{where}: expect uses {sorted(unbound)}, not in vars")
    kind = q.get("kind", "number")
    if kind not in ("number", "choice") or (kind == "choice") != bool(q.get("choices")):
        raise ParamError(f"{where}: kind is number, or choice with choices = [...]")
    return Question(q["id"], q["ask"], q["source"], expect, variables, kind, tuple(q.get("choices", ())),
                    float(q.get("tolerance", 0.0)), float(q.get("relative", 0.0)), q.get("hint", ""),
                    q.get("run", ""), q.get("unit", ""), bool(q.get("optional", False)),
                    bool(q.get("reading", False)), dict(q.get("params", {})))
