"""Teaching labs: what students see in labs/NN-name/ (the sheet, README.md, and a blank
answers.toml they fill in from what their own runs measured), and what they do not, in
labs/instructor/NN-name/ (the grading key, questions.toml: only what students predict, and
INSTRUCTOR.md). The students' VM leaves labs/instructor/ out (Vagrantfile); there `check` grades
what the students measured (labs/NN-name/measured.toml) and leaves the predictions to the
instructor.

    from testbed import labs
    lab = labs.get(3)                       # labs/03-*/measured.toml and the key, checked
    report = labs.check(lab, "answers.toml", results="out")

`check` grades each answer against the figure the student's run wrote (a scenario's NAME.json
under `--out DIR`, a saved `--json` output, or a saved `topo ... --json`), within the question's
tolerance, and gives the question's hint where an answer is off. No question has a fixed key:
every expected value is read from (or computed from) the student's own results.
"""
from __future__ import annotations

from pathlib import Path

from testbed.labs.grade import Grade, Report, check, expected_answers
from testbed.labs.questions import Lab, Question, load_lab

ROOT = Path(__file__).resolve().parents[2] / "labs"      # the sheets live in the repository
INSTRUCTOR = "instructor"                                # ROOT/instructor/NN-name: keys and notes

__all__ = ["Grade", "Lab", "Question", "Report", "all_labs", "check", "expected_answers", "get"]


def all_labs(root: Path | None = None) -> list[Lab]:
    """Every lab under `root` (ROOT by default), by number (directories named NN-name with a
    sheet), each with its measured.toml and its key from root/instructor/NN-name/questions.toml
    (Lab.key None where the key is absent)."""
    root = ROOT if root is None else root
    found = [load_lab(d, root / INSTRUCTOR / d.name) for d in sorted(root.glob("[0-9][0-9]-*"))
             if (d / "README.md").is_file()]
    return sorted(found, key=lambda lab: lab.number)


def get(number: int, root: Path | None = None) -> Lab:
    from testbed.core.errors import ParamError
    for lab in all_labs(root):
        if lab.number == number:
            return lab
    known = ", ".join(str(lab.number) for lab in all_labs(root))
    raise ParamError(f"no lab {number} (labs: {known}; `hpn-testbed lab list`)")
