"""Grade a student's answers.toml against what their own runs measured.

answers.toml holds one `id = answer` line per question (a number, a fraction such as "1/6", a
percentage such as "16.7%", or a word for a choice); "" is a blank. A file that is not TOML, an
id the lab does not ask, or an answer of the wrong type is malformed (ParamError naming the
line: exit 2). Each question's expected value comes from the source result in the results
directory, so two students with different runs are each graded against their own figures.

Without the key (a students' VM) the measured answers are graded all the same, from the lab's
measured.toml, and the predictions are counted and left for the instructor (status
`instructor`, which does not fail the check): "4 of 4 measured right; 2 predictions to your
instructor". With the key, everything is graded.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from testbed.core import files
from testbed.core.errors import ParamError
from testbed.labs import expr, results
from testbed.labs.questions import Lab, Question

PASS, WRONG, BLANK, MISSING, INSTRUCTOR = "pass", "wrong", "blank", "missing", "instructor"


@dataclass
class Grade:
    id: str
    status: str                 # pass | wrong | blank (no answer) | missing (no result to grade from)
                                # | instructor (a prediction, where the key is absent)
    answer: object = None
    expected: object = None     # what the student's run measured (or implies)
    allowed: float = 0.0        # the tolerance around it
    advice: str = ""            # what to look at again (wrong, missing, an invalid run)
    optional: bool = False      # going further: only a wrong answer fails

    @property
    def ok(self) -> bool:
        return self.status in (PASS, INSTRUCTOR) or (self.optional and self.status in (BLANK, MISSING))


@dataclass
class Report:
    lab: int
    answers: str
    results: str
    grades: list = field(default_factory=list)
    key: bool = True            # the answer key was here: the predictions were graded too

    @property
    def passed(self) -> bool:
        return all(g.ok for g in self.grades)

    @property
    def summary(self) -> str:
        """The closing line: how many were right, and, without the key, the predictions left."""
        graded = [g for g in self.grades if g.status != INSTRUCTOR]
        right = sum(g.status == PASS for g in graded)
        if self.key:
            return f"{right} of {len(graded)} right"
        left = [g for g in self.grades if g.status == INSTRUCTOR]
        answered = sum(g.answer not in (None, "") for g in left)
        blank = f" ({len(left) - answered} of them blank)" if answered < len(left) else ""
        return (f"{right} of {len(graded)} measured right; {len(left)} prediction"
                f"{'' if len(left) == 1 else 's'} to your instructor{blank}")


def check(lab: Lab, answers_path, results_dir=None) -> Report:
    """Grade every question the lab has here; without the key, its predictions are left (each a
    Grade with status `instructor`, in the sheet's order)."""
    answers_path = Path(answers_path)
    root = Path(results_dir) if results_dir else default_results(answers_path)
    answers = read_answers(lab, answers_path)
    found = results.index(root)
    report = Report(lab.number, str(answers_path), str(root), key=lab.key is not None)
    for qid in lab.asks:
        q = lab.question(qid)
        if q is None:       # a prediction, and no key: counted, left for the instructor
            report.grades.append(Grade(qid, INSTRUCTOR, answers.get(qid, "")))
            continue
        report.grades.append(grade(q, answers.get(q.id, ""), found, root))
        report.grades[-1].optional = q.optional
    return report


def default_results(answers_path: Path) -> Path:
    """`out/` next to the answers file (where the sheets' `--out out/...` put the runs)."""
    return answers_path.parent / "out"


def expected_answers(lab: Lab, results_dir) -> dict:
    """id -> the answer this results directory makes right (None where it cannot say)."""
    found = results.index(Path(results_dir))
    return {q.id: expected(q, found)[0] for q in lab.questions}


def expected(q: Question, found: dict):
    """(the expected value, why not) for question `q` from the indexed results."""
    result = found.get(q.source)
    again = f": run `{q.run}`" if q.run else ""
    if result is None:
        return None, f"no result {q.source!r}" + again
    try:
        env = {name: expr.lookup(result, path) for name, path in q.vars.items()}
        return expr.evaluate(q.expect, env), ""
    except (expr.Missing, TypeError, ValueError, ZeroDivisionError, KeyError, AttributeError,
            OverflowError) as e:
        return None, f"{q.source} does not have what this question reads ({e}): was it run as the sheet says?"


def grade(q: Question, answer, found: dict, root: Path) -> Grade:
    value, why = expected(q, found)
    if value is None:
        return Grade(q.id, MISSING, answer, advice=f"{why} (results in {root})")
    note = join(invalid_note(found[q.source]), params_note(q, found[q.source]))
    if q.range and isinstance(value, (int, float)) and not q.range[0] <= value <= q.range[1]:
        return Grade(q.id, MISSING, answer, advice=join(
            f"your run {q.source} measured {value:g}, outside what this lab gives "
            f"({q.range[0]:g} to {q.range[1]:g}): run it again as the sheet says"
            + (f" (`{q.run}`)" if q.run else ""), note))
    if answer == "":
        return Grade(q.id, BLANK, None, value, advice=note)
    if q.kind == "choice":
        right = str(answer).strip().lower() == str(value).strip().lower()
        return Grade(q.id, PASS if right else WRONG, answer, value,
                     advice="" if right else join(q.hint, note))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return Grade(q.id, MISSING, answer, advice=f"{q.source}: the run measured no number here ({value!r})")
    allowed = q.allowed(value)
    right = abs(answer - value) <= allowed + 1e-9
    return Grade(q.id, PASS if right else WRONG, answer, value, allowed,
                 advice="" if right else join(q.hint, note))


def params_note(q: Question, result: dict) -> str:
    """What the run was run with, where it differs from what the question assumes: its `params`
    (paths into the result) and the `--set KEY=VALUE` of its `run` command (against the knobs and
    settings the result recorded; a key it did not set ran at its default)."""
    differ = {}
    for path, assumed in q.params.items():
        try:
            used = expr.lookup(result, path)
        except expr.Missing:
            continue
        if not same(used, assumed):
            differ[path.rsplit(".", 1)[-1]] = (used, assumed)
    setup = result.get("setup") if isinstance(result.get("setup"), dict) else None
    for key, assumed in re.findall(r"--set (\w+)=(\S+)", q.run) if setup is not None else ():
        used = setup.get("settings", {}).get(key, setup.get("knobs", {}).get(key, "its default"))
        if key not in differ and not same(used, assumed):
            differ[key] = (used, assumed)
    if not differ:
        return ""
    used = ", ".join(f"{k}={shown(u)}" for k, (u, _) in differ.items())
    asked = ", ".join(f"{k}={a}" for k, (_, a) in differ.items())
    return (f"your run {q.source} used {used}, the question is about {asked}"
            + (f": run `{q.run}`" if q.run else ""))


def same(used, assumed) -> bool:
    """A recorded value and the one a question assumes, compared as numbers where both are."""
    def norm(v):
        if isinstance(v, (list, tuple)):
            return ",".join(norm(x) for x in v)
        try:
            return f"{float(v):g}"
        except (TypeError, ValueError):
            return str(v)
    return norm(used) == norm(assumed)


def shown(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def invalid_note(result: dict) -> str:
    if result.get("verdict") == "invalid":
        return "that run was judged invalid (the CPU, not the fabric, was the bottleneck): run it again"
    return ""


def join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


# ---- the answers file ----

def read_answers(lab: Lab, path: Path) -> dict:
    """id -> answer (a number, a word, or "" for a blank); ParamError (exit 2) naming the line."""
    data, text = files.load_toml(path, "answers", files.ANSWERS_MAX)   # regular, bounded, UTF-8
    answers = {}
    for key, raw in data.items():
        where = f"{path}, line {line_of(text, key)}"
        if key == "lab":
            if raw != lab.number:
                raise ParamError(f"{where}: lab = {raw!r}, but this is lab {lab.number}")
            continue
        q = lab.question(key)
        if q is None and key in lab.asks:       # a prediction, no key here: kept as written
            answers[key] = prediction_of(key, raw, where)
            continue
        if q is None:
            raise ParamError(f"{where}: lab {lab.number} asks no {key!r} (it asks: {', '.join(lab.asks)})")
        answers[key] = answer_of(q, raw, where)
    return answers


def prediction_of(qid: str, raw, where: str):
    """A prediction the key is not here to read: a number or a word, as written."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)) or (
            isinstance(raw, float) and not math.isfinite(raw)) or len(str(raw)) > 80:
        raise ParamError(f"{where}: {qid} = {str(raw)[:40]!r}: expected a number or a word")
    return raw


def answer_of(q: Question, raw, where: str):
    if raw == "":
        return ""
    if q.kind == "choice":
        if not isinstance(raw, str) or raw.strip().lower() not in [c.lower() for c in q.choices]:
            raise ParamError(f"{where}: {q.id} = {raw!r}: answer one of {', '.join(map(repr, q.choices))}")
        return raw.strip()
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise ParamError(f"{where}: {q.id} = {raw!r}: expected a number")
    try:
        number = float(raw if not isinstance(raw, str) else number_of(raw))
    except (TypeError, OverflowError, ValueError):    # None, or an integer past a float's range
        number = None
    if number is None or not math.isfinite(number):
        raise ParamError(f"{where}: {q.id} = {str(raw)[:40]!r}: expected a number (0.25, \"1/4\", \"25%\", "
                         f"\"1,024\" "
                         "or \"15:1\")")
    return float(number)


DIGITS = r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:[eE]-?\d+)?"
NUMBER = re.compile(rf"^\s*({DIGITS})\s*(?:([/:])\s*({DIGITS}))?\s*(%?)\s*$")


def number_of(text: str) -> float | None:
    """A number as the tables print it or a student writes it: "0.25", "1/4", "25%", "1,024"
    (thousands separated by commas), "15:1" (a ratio: 15); None if it is none of these."""
    m = NUMBER.match(text)
    if not m:
        return None
    value, divisor = float(m[1].replace(",", "")), float(m[3].replace(",", "")) if m[3] else 1.0
    if divisor == 0:
        return None
    value /= divisor
    return value / 100 if m[4] else value


def line_of(text: str, key: str) -> int:
    pattern = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.match(line):
            return number
    return 1
