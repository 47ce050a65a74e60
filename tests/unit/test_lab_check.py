"""`hpn-testbed lab check`: right answers pass, answers off by more than their tolerance fail with
the question's hint, a malformed answers file exits 2 naming the line; and the labs themselves
(questions files, sheets, blank answers) agree with each other.

The results are fixtures recorded by running every lab sheet's commands here
(tests/integration/test_lab_sheets.py with HPN_LAB_RESULTS set; series dropped to keep them small):
tests/unit/fixtures/labs/NN-name/out/.
"""
from __future__ import annotations

import json
import re
import shutil

import pytest

from testbed import labs
from testbed.cli import main
from testbed.labs import expr
from testbed.labs.grade import number_of

FIXTURES = labs.ROOT.parent / "tests" / "unit" / "fixtures" / "labs"
LABS = labs.all_labs()


def workdir(tmp_path, lab):
    """A student's directory: the recorded results in out/, answers.toml to be written."""
    shutil.copytree(FIXTURES / lab.name / "out", tmp_path / "out")
    return tmp_path


def write(path, answers: dict, lab=None):
    lines = [f"lab = {lab.number}"] if lab else []
    for key, value in answers.items():
        shown = json.dumps(value) if isinstance(value, str) or value is None else repr(value)
        lines.append(f"{key} = {shown}")
    path.write_text("\n".join(lines).replace("= null", '= ""') + "\n")
    return path


def check(lab, answers, capsys, *extra):
    status = main(["lab", "check", str(lab.number), str(answers), *extra])
    out, err = capsys.readouterr()
    return status, out + err


def wrong(q, value):
    """An answer just outside the question's tolerance (or another choice)."""
    if q.kind == "choice":
        return next(c for c in q.choices if c.lower() != str(value).lower())
    return value + q.allowed(value) * 1.5 + 1


def test_six_labs_with_questions():
    assert [lab.number for lab in LABS] == [1, 2, 3, 4, 5, 6]
    for lab in LABS:
        assert len(lab.questions) >= 5 and 60 <= lab.minutes <= 90, lab.name
        assert [q.id for q in lab.questions] == list(lab.asks), f"{lab.name}: every question graded here"
        assert any(q.optional for q in lab.questions), f"{lab.name}: going further asks something"


@pytest.mark.parametrize("lab", LABS, ids=lambda lab: lab.name)
def test_sheet_template_and_questions_agree(lab):
    sheet = lab.sheet.read_text()
    template = (lab.directory / "answers.toml").read_text()
    assert sheet.startswith(f"# Lab {lab.number}: {lab.title} (about {lab.minutes} minutes)\n"), lab.sheet
    for section in ("**Goal.**", "## Context", "## Steps", "## Questions", "## Going further"):
        assert section in sheet, f"{lab.sheet}: no {section}"
    for q in lab.questions:
        assert f"`{q.id}`" in sheet, f"{lab.sheet} does not ask {q.id}"
        assert re.search(rf"^{q.id} = \"\"", template, re.MULTILINE), f"answers.toml has no blank {q.id}"
        if q.run.startswith(("sudo ", "hpn-testbed ")):
            assert q.run in sheet, f"{q.id}: the sheet does not run `{q.run}`"
    assert f"hpn-testbed lab check {lab.number} answers.toml" in sheet


@pytest.mark.parametrize("lab", LABS, ids=lambda lab: lab.name)
def test_right_answers_pass(lab, tmp_path, capsys):
    home = workdir(tmp_path, lab)
    right = labs.expected_answers(lab, home / "out")
    assert all(v is not None for v in right.values()), right
    status, out = check(lab, write(home / "answers.toml", right, lab), capsys)
    assert status == 0, out
    assert f"{len(lab.questions)} of {len(lab.questions)} right" in out


@pytest.mark.parametrize("lab", LABS, ids=lambda lab: lab.name)
def test_answers_within_tolerance_pass_and_beyond_fail_with_the_hint(lab, tmp_path, capsys):
    home = workdir(tmp_path, lab)
    right = labs.expected_answers(lab, home / "out")
    nudged = {q.id: right[q.id] + q.allowed(right[q.id]) * 0.9 if q.kind == "number"
              else right[q.id].upper() for q in lab.questions}
    assert check(lab, write(home / "answers.toml", nudged), capsys)[0] == 0
    for q in lab.questions:
        answers = {**right, q.id: wrong(q, right[q.id])}
        status, out = check(lab, write(home / "answers.toml", answers), capsys,
                            "--results", str(home / "out"))
        assert status == 1, (q.id, out)
        assert f"{q.id}: " in out and q.hint in " ".join(out.split()), out   # the whole hint
        assert f"{len(lab.questions) - 1} of {len(lab.questions)} right" in out


def test_fractions_and_percentages_are_numbers():
    assert number_of("1/6") == pytest.approx(1 / 6)
    assert number_of("16.7%") == pytest.approx(0.167)
    assert number_of(" 84000 ") == 84000
    assert number_of("1/0") is None and number_of("about 5") is None


def test_blank_and_missing_results_fail_saying_what_to_run(tmp_path, capsys):
    lab = labs.get(3)
    template = tmp_path / "answers.toml"
    shutil.copy(lab.directory / "answers.toml", template)
    status, out = check(lab, template, capsys)            # no out/ at all: nothing measured
    assert status == 1
    assert "run `sudo hpn-testbed run dual-tor-link-failure --quick --out out/nics2`" in out
    home = workdir(tmp_path / "w", lab)
    shutil.copy(lab.directory / "answers.toml", home / "answers.toml")
    status, out = check(lab, home / "answers.toml", capsys)
    assert status == 1 and "blank" in out and "0 of 8 right" in out


def test_optional_questions_may_stay_blank(tmp_path, capsys):
    lab = labs.get(3)
    home = workdir(tmp_path, lab)
    right = labs.expected_answers(lab, home / "out")
    optional = {q.id for q in lab.questions if q.optional}
    shutil.rmtree(home / "out" / "experiment")
    required = {k: v for k, v in right.items() if k not in optional}
    status, out = check(lab, write(home / "answers.toml", required), capsys)
    assert status == 0, out


def test_an_invalid_run_is_named(tmp_path, capsys):
    lab = labs.get(3)
    home = workdir(tmp_path, lab)
    path = home / "out" / "tor-failure.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "verdict": "invalid"}))
    right = labs.expected_answers(lab, home / "out")
    off = {**right, "tor_kept": right["tor_kept"] + 0.5}
    status, out = check(lab, write(home / "answers.toml", off), capsys)
    assert status == 1 and "judged invalid" in out


def test_saved_json_output_counts_as_results(tmp_path, capsys):
    """`run ... --json > FILE.json` (a list of results) is read like --out's NAME.json."""
    lab = labs.get(6)
    home = workdir(tmp_path, lab)
    names = ("node-limited-moe", "mpft-vs-mrft")
    results = [json.loads((home / "out" / f"{n}.json").read_text()) for n in names]
    for n in names:
        (home / "out" / f"{n}.json").unlink()
    (home / "out" / "saved.json").write_text(json.dumps(results))
    right = labs.expected_answers(lab, home / "out")
    assert right["measured_m4"] is not None and right["faster"] is not None


MALFORMED = [
    ("not toml", "lab = 3\nloss_2 = = 0.25\n", "line 2"),
    ("an unknown question", "lab = 3\nloss_2 = 0.25\nloss_9 = 1\n", "line 3"),
    ("a word for a number", "lab = 3\n\nloss_3 = \"a sixth\"\n", "line 3"),
    ("a boolean", "loss_2 = true\n", "line 1"),
    ("another lab's file", "lab = 4\nloss_2 = 0.25\n", "line 1"),
    ("a table", "[answers]\nloss_2 = 0.25\n", "line 1"),
    ("not a choice", "lab = 4\ncarrier = \"sideways\"\n", "line 2"),
]


@pytest.mark.parametrize("why,text,where", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_file_exits_2_naming_the_line(why, text, where, tmp_path, capsys):
    number = 4 if "carrier" in text else 3
    path = tmp_path / "answers.toml"
    path.write_text(text)
    status = main(["lab", "check", str(number), str(path)])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and where in err, err


def test_bad_invocations_exit_2(tmp_path, capsys):
    assert main(["lab", "check", "9", str(tmp_path / "a.toml")]) == 2
    assert main(["lab", "check", "3", str(tmp_path / "absent.toml")]) == 2
    assert "no lab 9" in capsys.readouterr().err


def test_lab_list(capsys):
    assert main(["lab", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["result"]
    assert [x["number"] for x in listed] == [1, 2, 3, 4, 5, 6]


def test_lab_list_takes_titles_and_times_from_the_sheets_headings(tmp_path, capsys, monkeypatch):
    """Without labs/instructor/ (a students' VM), each lab still has its sheet's title and time
    and the number of questions its sheet asks, not 60 min, 0 questions and the folder's name."""
    sheets = tmp_path / "labs"
    for lab in LABS:
        shutil.copytree(lab.directory, sheets / lab.name)
    monkeypatch.setattr(labs, "ROOT", sheets)
    assert main(["lab", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["result"]
    for row, lab in zip(listed, LABS):
        first = lab.sheet.read_text().splitlines()[0]
        assert first == f"# Lab {row['number']}: {row['title']} (about {row['minutes']} minutes)", first
        assert row["title"] != lab.name and row["key"] is False
        assert row["questions"] == len(lab.questions) >= 5 and row["predictions"] == sum(
            q.prediction for q in lab.questions)
    assert [r["minutes"] for r in listed] == [60, 75, 75, 75, 75, 60]
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["lab", "list"]) == 0
    assert "Dual-ToR: lose a link, then a whole ToR" in " ".join(capsys.readouterr().out.split())


def test_expressions_evaluate_only_arithmetic():
    assert expr.evaluate("1 / (2 * n)", {"n": 4}) == 0.125
    assert expr.evaluate("'same' if abs(d) < 0.05 else 'mpft'", {"d": -0.01}) == "same"
    assert expr.evaluate("max(values(x))", {"x": {"a": 2, "b": 3}}) == 3
    for bad in ("__import__('os')", "x.__class__", "open('f')", "[c for c in x]"):
        with pytest.raises(ValueError):
            expr.parse(bad)


def test_paths_select_rows_by_field():
    data = {"figures": {"rows": [{"M": 1, "b": 10}, {"M": 4, "b": 40}]}}
    assert expr.lookup(data, "figures.rows[M=4].b") == 40
    assert expr.lookup(data, "figures.rows.0.b") == 10
    with pytest.raises(expr.Missing):
        expr.lookup(data, "figures.rows[M=2].b")


# ---- what students see, the formats the tables print, the hints, unreadable results ----

def test_a_students_folder_holds_no_answer_key():
    """The sheets' folders hold the sheet, the blank answers and the checks of what is measured;
    keys (only the predictions) and notes live in labs/instructor/, which the students' VM
    leaves out of /vagrant."""
    for lab in LABS:
        shown = sorted(p.name for p in lab.directory.iterdir())
        assert shown == ["README.md", "answers.toml", "measured.toml"], lab.name
        key = labs.ROOT / "instructor" / lab.name
        assert lab.key == key / "questions.toml" and (key / "INSTRUCTOR.md").is_file()
        measured = (lab.directory / "measured.toml").read_text()
        for q in lab.questions:
            if q.prediction:        # computed from the run's parameters, never read off a result
                assert q.vars.get("value") is None and f'"{q.id}"' not in measured, q.id
                assert q.expect not in measured, f"{lab.name}: measured.toml gives {q.id} away"
    vagrantfile = (labs.ROOT.parent / "Vagrantfile").read_text()
    assert re.search(r'rsync__exclude: \[[^]]*"labs/instructor/"', vagrantfile)


def students_vm(tmp_path, monkeypatch, number):
    """A students' copy of the labs (no labs/instructor/) and a student's directory."""
    sheets = tmp_path / "labs"
    for lab in LABS:
        shutil.copytree(lab.directory, sheets / lab.name)
    monkeypatch.setattr(labs, "ROOT", sheets)
    return labs.get(number), workdir(tmp_path / "student", next(x for x in LABS if x.number == number))


def test_without_the_key_measured_answers_get_feedback(tmp_path, capsys, monkeypatch):
    """A students' VM: the sheet's own `lab check 3 answers.toml` grades what was measured and
    counts the predictions for the instructor (exit 0 when every measured answer is right)."""
    keyed = labs.get(3)
    right = labs.expected_answers(keyed, FIXTURES / keyed.name / "out")
    lab, home = students_vm(tmp_path, monkeypatch, 3)
    assert lab.key is None and set(lab.predictions) == {"predicted_loss_3", "predicted_tor_kept"}
    status, out = check(lab, write(home / "answers.toml", right, lab), capsys)
    assert status == 0, out
    text = " ".join(out.split())
    assert "6 of 6 measured right; 2 predictions to your instructor" in text, text
    assert "not on this machine" not in text and "to your instructor" in text
    off = {**right, "loss_2": right["loss_2"] + 0.2, "predicted_tor_kept": ""}
    status, out = check(lab, write(home / "answers.toml", off, lab), capsys)
    text = " ".join(out.split())
    assert status == 1 and "5 of 6 measured right; 2 predictions to your instructor (1 of them blank)" in text
    assert keyed.question("loss_2").hint in text
    wild = {**right, "predicted_loss_3": 5}     # no key here: a prediction is not judged
    assert check(lab, write(home / "answers.toml", wild, lab), capsys)[0] == 0
    status = main(["lab", "check", "3", str(write(home / "answers.toml", right, lab)), "--json"])
    result = json.loads(capsys.readouterr().out)["result"]
    assert status == 0 and result["key"] is False and result["passed"] is True
    left = [g for g in result["grades"] if g["status"] == "instructor"]
    assert [g["id"] for g in left] == ["predicted_loss_3", "predicted_tor_kept"]
    assert all(g["expected"] is None for g in left)


def test_without_the_key_a_malformed_prediction_still_exits_2(tmp_path, capsys, monkeypatch):
    lab, home = students_vm(tmp_path, monkeypatch, 3)
    for text, where in (("lab = 3\npredicted_loss_3 = [1]\n", "line 2"), ("lab = 3\nloss_9 = 1\n", "line 2")):
        (home / "answers.toml").write_text(text)
        status = main(["lab", "check", "3", str(home / "answers.toml")])
        out, err = capsys.readouterr()
        assert status == 2 and out == "" and len(err.splitlines()) == 1 and where in err, err


def test_a_lab_without_predictions_grades_everything_without_the_key(tmp_path, capsys, monkeypatch):
    keyed = labs.get(2)
    right = labs.expected_answers(keyed, FIXTURES / keyed.name / "out")
    lab, home = students_vm(tmp_path, monkeypatch, 2)
    status, out = check(lab, write(home / "answers.toml", right, lab), capsys)
    assert status == 0 and f"{len(lab.asks)} of {len(lab.asks)} measured right; 0 predictions" in out, out


def test_a_run_outside_what_the_lab_gives_is_to_be_run_again(tmp_path, capsys):
    """measured.toml's `range`: a run whose figure lies outside it is not graded, it is rerun."""
    lab = labs.get(3)
    home = workdir(tmp_path, lab)
    right = labs.expected_answers(lab, home / "out")
    path = home / "out" / "nics2" / "dual-tor-link-failure.json"
    data = json.loads(path.read_text())
    data["figures"]["single_tor"]["loss"] = 0.95
    path.write_text(json.dumps(data))
    status, out = check(lab, write(home / "answers.toml", {**right, "single_loss_2": 0.95}, lab), capsys)
    text = " ".join(out.split())
    assert status == 1 and "outside what this lab gives (0.35 to 0.65): run it again" in text, text


def test_the_readme_does_not_give_lab_3s_answer():
    """The README's parameter example must not say what lab 3 asks students to predict."""
    readme = (labs.ROOT.parent / "README.md").read_text()
    for line in readme.splitlines():
        if "nics=3" in line:
            assert not re.search(r"1/6|1/\(2 x 3\)|16\.7|0\.167|expects a loss", line), line
    assert "1/6" not in readme and "1/(2 x 3)" not in readme



def test_lab_1_grades_only_the_students_own_output_or_reading_questions():
    lab = labs.get(1)
    sheet = lab.sheet.read_text()
    for q in lab.questions:
        assert q.reading or (q.run and q.run in sheet), \
            f"{q.id}: neither a reading question nor run by the sheet"
        if q.reading:
            assert f"`{q.id}` *(reading)*" in sheet, q.id


def test_answers_as_the_tables_print_them(tmp_path, capsys):
    lab = labs.get(1)
    home = workdir(tmp_path, lab)
    right = labs.expected_answers(lab, home / "out")
    assert (right["gpus_per_segment"], right["agg_oversubscription"]) == (1024, 15)
    printed = {**right, "gpus_per_segment": "1,024", "agg_oversubscription": "15:1", "gpus_per_pod": 15000,
               "tor_ratio_active": "1.067 : 1", "mpft_gpus": "16,384"}
    status, out = check(lab, write(home / "answers.toml", printed, lab), capsys)
    assert status == 0, out
    assert number_of("1,024") == 1024 and number_of("15:1") == 15 and number_of("1,02") is None


def test_the_hint_names_the_runs_parameters_when_they_differ(tmp_path, capsys):
    """A right prediction for nics=3 graded against a run made with nics=2 says which N it used."""
    lab = labs.get(3)
    home = workdir(tmp_path, lab)
    right = labs.expected_answers(lab, home / "out")
    nics3 = home / "out" / "nics3"
    shutil.rmtree(nics3)
    shutil.copytree(home / "out" / "nics2", nics3)
    status, out = check(lab, write(home / "answers.toml", right, lab), capsys)
    assert status == 1
    text = " ".join(out.split())
    assert "your run nics3/dual-tor-link-failure used nics=2, the question is about nics=3" in text, text
    assert "--set nics=3 --out out/nics3" in text


def test_a_corrupt_result_is_unreadable_not_missing(tmp_path, capsys):
    """A result cut off mid-write, or not UTF-8: one line calling it unreadable (exit 2), not a
    question graded as if the run were missing."""
    lab = labs.get(3)
    home = workdir(tmp_path, lab)
    right = labs.expected_answers(lab, home / "out")
    answers = write(home / "answers.toml", right, lab)
    for corrupt in (b'{"scenario": "tor-fail', b"\xff\xfe"):
        (home / "out" / "tor-failure.json").write_bytes(corrupt)
        status, out = check(lab, answers, capsys)
        assert status == 2 and len(out.splitlines()) == 1, out
        assert "unreadable result '" in out and "tor-failure.json'" in out and "missing" not in out, out


def test_the_hint_names_the_knobs_a_run_was_made_with(tmp_path, capsys):
    """The `--set` of a question's run command, against the knobs the result recorded."""
    lab = labs.get(4)
    home = workdir(tmp_path, lab)
    right = labs.expected_answers(lab, home / "out")
    path = home / "out" / "eager" / "one-way-fault.json"
    data = json.loads(path.read_text())
    data["setup"]["knobs"].update(interval=0.015, dead_after=0.06)      # run at the defaults
    path.write_text(json.dumps(data))
    status, out = check(lab, write(home / "answers.toml", {**right, "false_downs_eager": 99}, lab), capsys)
    text = " ".join(out.split())
    assert status == 1 and "your run eager/one-way-fault used interval=0.015, dead_after=0.06, the " \
        "question is about interval=0.002, dead_after=0.006" in text, text


def test_a_results_tree_too_wide_to_walk_is_one_line(tmp_path, monkeypatch):
    """`--results /` (a careless user) must not walk the whole disk: past RESULTS_DIRS_MAX
    directories the check stops with one line."""
    from testbed.core import files
    from testbed.core.errors import ParamError
    from testbed.labs import results
    monkeypatch.setattr(files, "RESULTS_DIRS_MAX", 5)
    for k in range(6):
        (tmp_path / f"d{k}").mkdir()
    with pytest.raises(ParamError, match="more than 5 directories"):
        results.json_files(tmp_path)
    monkeypatch.setattr(files, "RESULTS_DIRS_MAX", 7)
    assert results.json_files(tmp_path) == []
