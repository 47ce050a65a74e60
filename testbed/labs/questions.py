"""A lab's questions, checked before any answer is. They come from two files of the same form:
labs/NN-name/measured.toml, which students see (the checks of what their own runs measured: each
answer against the figure the run wrote, so it gives nothing away), and the key,
labs/instructor/NN-name/questions.toml, apart from what students see, which holds only what they
must predict (a students' VM has no key: its predictions are left for the instructor). The lab's
title and time are the sheet's heading, `# Lab N: TITLE (about M minutes)`; what it asks, in the
sheet's order, is the blank answers.toml beside it.

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
    range = [0.05, 0.5]                # measured.toml: what a run of this lab gives; a run
                                       # outside it is to be run again, not graded

`kind = "choice"` with `choices = [...]` takes a word; the expression gives the right one.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from testbed.core import files
from testbed.core.errors import ParamError
from testbed.labs import expr

ID = re.compile(r"^[a-z][a-z0-9_]*$")
QUESTION_KEYS = {"id", "ask", "source", "value", "vars", "expect", "tolerance", "relative", "hint",
                 "run", "kind", "choices", "unit", "optional", "reading", "params", "range"}
HEADING = re.compile(r"^# Lab (?P<number>\d+): (?P<title>.+?)(?: \(about (?P<minutes>\d+) minutes\))?\s*$")


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
    range: tuple | None = None      # (low, high) a run of the lab measures (measured.toml)
    prediction: bool = False        # from the key: what students predict, graded by the key only

    def allowed(self, measured: float) -> float:
        """The largest distance from `measured` an answer may have and still pass."""
        return max(self.tolerance, abs(measured) * self.relative)


@dataclass(frozen=True)
class Lab:
    number: int
    name: str                       # the directory, e.g. 03-dual-tor
    title: str                      # the sheet's heading
    minutes: int | None             # the sheet's "(about M minutes)", None where it gives none
    directory: Path                 # what students see: the sheet, measured.toml, the blank answers
    questions: tuple                # what can be graded here: measured.toml's, and the key's
    key: Path | None = None         # the grading key (questions.toml), None where it is absent
    asks: tuple = ()                # every id the sheet asks (its blank answers.toml), in order

    @property
    def sheet(self) -> Path:
        return self.directory / "README.md"

    @property
    def predictions(self) -> tuple:
        """The ids asked that measured.toml does not check: the key's, or, without it, the
        instructor's to grade."""
        measured = {q.id for q in self.questions if not q.prediction}
        return tuple(i for i in self.asks if i not in measured)

    def question(self, qid: str) -> Question | None:
        return next((q for q in self.questions if q.id == qid), None)


def load_lab(directory: Path, key_dir: Path | None = None) -> Lab:
    """The lab of sheet directory `directory`: its title and time from the sheet's heading, what it
    asks from its blank answers.toml, its questions from its measured.toml and from `key_dir`'s
    questions.toml (by default the same directory; Lab.key None where that is absent)."""
    number, title, minutes = heading(directory / "README.md", directory.name)
    asks = blank_ids(directory / "answers.toml")
    key = (key_dir or directory) / "questions.toml"
    measured = read_questions(directory / "measured.toml", prediction=False)
    predicted = read_questions(key, prediction=True) if key.is_file() else ()
    questions = (*measured, *predicted)
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        raise ParamError(f"{directory}: question ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
    unasked = [i for i in ids if i not in asks]
    if unasked:
        raise ParamError(f"{directory / 'answers.toml'}: has no blank for {unasked}")
    questions = tuple(sorted(questions, key=lambda q: asks.index(q.id)))
    return Lab(number, directory.name, title, minutes, directory, questions,
               key if key.is_file() else None, asks)


def heading(sheet: Path, name: str) -> tuple[int, str, int | None]:
    """(number, title, minutes) from the sheet's first line, `# Lab N: TITLE (about M minutes)`;
    the folder's number and name, and no time, where the sheet has no such line."""
    first = sheet.read_text(encoding="utf-8").splitlines()[:1] if sheet.is_file() else []
    m = HEADING.match(first[0]) if first else None
    if not m:
        return int(name[:2]), name, None
    return int(m["number"]), m["title"], int(m["minutes"]) if m["minutes"] else None


def blank_ids(path: Path) -> tuple:
    """The ids of a blank answers.toml, in the order it lists them (`lab` is not one)."""
    if not path.is_file():
        return ()
    data, _ = files.load_toml(path, "blank answers", files.ANSWERS_MAX)
    return tuple(k for k in data if k != "lab")


def read_questions(path: Path, prediction: bool) -> tuple:
    if not path.is_file():
        return ()
    data, _ = files.load_toml(path, "lab questions", files.EXPERIMENT_MAX)
    unknown = set(data) - {"question"}
    if unknown:
        raise ParamError(f"{path}: unknown keys {sorted(unknown)} (title and time: the sheet's heading)")
    found = tuple(question(path, i, q) for i, q in enumerate(data.get("question", []), 1))
    return tuple(replace(q, prediction=prediction) for q in found)


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
    bounds = q.get("range")
    numbers = isinstance(bounds, list) and len(bounds) == 2 and all(
        isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds)
    if bounds is not None and not (numbers and bounds[0] <= bounds[1]):
        raise ParamError(f"{where}: range is [low, high], two numbers")
    return Question(q["id"], q["ask"], q["source"], expect, variables, kind, tuple(q.get("choices", ())),
                    float(q.get("tolerance", 0.0)), float(q.get("relative", 0.0)), q.get("hint", ""),
                    q.get("run", ""), q.get("unit", ""), bool(q.get("optional", False)),
                    bool(q.get("reading", False)), dict(q.get("params", {})),
                    tuple(map(float, bounds)) if bounds is not None else None)
