"""Every command of every lab sheet (labs/NN-name/README.md), run as the sheet says, so that a
sheet never goes stale.

A sheet's ```sh blocks are what a student types in the Vagrant VM, where the repository is
/vagrant and `sudo hpn-testbed` is the venv's CLI (vagrant/provision.sh links it). Here, as root,
/vagrant becomes this repository, `sudo ` is dropped, the venv's bin comes first on PATH and HOME
is a temporary directory (the sheets work in ~/labN). A ```mininet block is what the student
types at the prompt of the `--cli` command in the block before it: its lines (without the
`mininet> ` prompt) go to that block's stdin, ending with `exit`.

Each command must exit 0, except `run SCENARIO` which may exit 1 (a verdict other than
reproduced: the sheet still worked, and the student's answers are graded against whatever it
measured). Before a sheet's `lab check N answers.toml`, the test writes the answers that the
lab's own results make right (testbed.labs.expected_answers) into answers.toml: the check must
then pass (exit 0); the blank template must not (exit 1). No command reads labs/instructor/
(the grading keys and notes), which a students' VM does not have; there (a copy of the lab's
folder alone) the same answers must pass what was measured and leave the predictions.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed import labs

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
FENCE = re.compile(r"^```(\w*)\s*\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)
RC = "@@rc"
TIMES: dict[int, float] = {}


def blocks(sheet: Path) -> list[tuple[str, str]]:
    """(kind, text) of every sh and mininet block, in order."""
    return [(m[1], m[2]) for m in FENCE.finditer(sheet.read_text()) if m[1] in ("sh", "mininet")]


def sessions(sheet: Path) -> list[tuple[list[str], str]]:
    """(command lines, stdin) per sh block; a mininet block becomes the stdin of the block before."""
    out: list[tuple[list[str], str]] = []
    for kind, text in blocks(sheet):
        if kind == "sh":
            out.append(([line for line in text.splitlines() if line.strip()], ""))
        else:
            assert out and out[-1][0][-1].rstrip().endswith("--cli"), \
                f"{sheet}: a mininet block must follow a block ending with a --cli command"
            typed = [line.removeprefix("mininet>").strip() for line in text.splitlines() if line.strip()]
            assert typed[-1] == "exit", f"{sheet}: a mininet block ends with exit"
            out[-1] = (out[-1][0], "\n".join(typed) + "\n")
    return out


def here(line: str) -> str:
    """A sheet's command as it runs here: the repository for /vagrant, root without sudo."""
    line = line.replace("/vagrant", str(ROOT))
    return re.sub(r"(^|[;&|(]\s*)sudo ", r"\1", line)


def script(lines: list[str]) -> str:
    """Each line run in one shell, its exit status printed after it."""
    return "".join(f"{here(line)}\n__rc=$?; echo; echo {RC} {i} $__rc\n" for i, line in enumerate(lines))


def fill_answers(lab, workdir: Path) -> None:
    """answers.toml with the answers this lab's own results make right (blank where none)."""
    right = labs.expected_answers(lab, workdir / "out")
    lines = [f"lab = {lab.number}"]
    for qid, value in right.items():
        lines.append(f"{qid} = " + ('""' if value is None else repr(value) if not isinstance(value, str)
                                    else f'"{value}"'))
    (workdir / "answers.toml").write_text("\n".join(lines) + "\n")


def run_session(lab, lines: list[str], stdin: str, env: dict, home: Path, earlier: list[str]) -> str:
    """Run one session of the sheet; `earlier` (what the sheet's sessions so far printed, its
    errors included) is appended to, and shown when this one fails: a `run` that exited 1
    without a result is why a later `lab check` finds none."""
    checks = [i for i, line in enumerate(lines) if " lab check " in f" {line} "]
    workdir = home / f"lab{lab.number}"
    if checks:
        blank = subprocess.run([str(BIN / "hpn-testbed"), "lab", "check", str(lab.number), "answers.toml"],
                               cwd=workdir, env=env, capture_output=True, text=True, timeout=60, check=False)
        assert blank.returncode == 1, f"the blank template should not pass: {blank.stdout}{blank.stderr}"
        fill_answers(lab, workdir)
    proc = subprocess.run(["bash", "-c", script(lines)], input=stdin, cwd=home, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    statuses = dict(re.findall(rf"{RC} (\d+) (\d+)$", proc.stdout, re.MULTILINE))
    for i, line in enumerate(lines):
        rc = int(statuses.get(str(i), -1))
        allowed = (0, 1) if re.search(r"hpn-testbed run ", line) else (0,)
        assert rc in allowed, (f"lab {lab.number}: `{line}` exited {rc}\n{proc.stdout[-3000:]}\n"
                               f"{proc.stderr[-3000:]}\n--- the sheet's earlier sessions, their "
                               f"errors:\n{''.join(earlier)[-4000:]}")
    output = proc.stdout + proc.stderr
    earlier.append("".join(f"$ {line}\n" for line in lines) + "".join(
        f"{row}\n" for row in proc.stderr.splitlines() if "error" in row.lower() or "hpn-testbed:" in row))
    for word in ("Traceback", "Unknown command", "usage:"):
        assert word not in output, f"lab {lab.number}: {word!r} in\n{output[-3000:]}"
    for typed in stdin.splitlines():
        name = typed.split()[0]
        assert f"*** {name}: " not in output, f"lab {lab.number}: `{typed}` failed:\n{output[-3000:]}"
    return output


@pytest.mark.parametrize("lab", labs.all_labs(), ids=lambda lab: lab.name)
def test_every_command_of_the_sheet_runs(lab, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PATH": f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
           "COLUMNS": "120"}
    started = time.monotonic()
    found = sessions(lab.sheet)
    assert len(found) >= 4, f"{lab.sheet}: a sheet has setup, steps and a check"
    typed = "\n".join(line for lines, stdin in found for line in [*lines, stdin])
    assert "labs/instructor" not in typed, f"{lab.sheet}: a students' VM has no labs/instructor/"
    earlier: list[str] = []
    for lines, stdin in found:
        run_session(lab, lines, stdin, env, home, earlier)
    # every question, going further included, now has a result to be graded from
    workdir = home / f"lab{lab.number}"
    fill_answers(lab, workdir)
    final = subprocess.run([str(BIN / "hpn-testbed"), "lab", "check", str(lab.number), "answers.toml"],
                           cwd=workdir, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert final.returncode == 0, f"{final.stdout}{final.stderr}\n--- errors:\n{''.join(earlier)[-4000:]}"
    missing = [k for k, v in labs.expected_answers(lab, workdir / "out").items() if v is None]
    assert not missing, f"lab {lab.number}: no result for {missing} after every command ran"
    students = tmp_path / "students-labs"       # a students' VM: the lab's folder, no instructor/
    shutil.copytree(lab.directory, students / lab.name)
    report = labs.check(labs.get(lab.number, root=students), workdir / "answers.toml")
    assert report.passed and not report.key, report.summary
    measured = sum(not q.prediction for q in lab.questions)
    assert report.summary.startswith(f"{measured} of {measured} measured right; "
                                     f"{len(lab.predictions)} prediction"), report.summary
    TIMES[lab.number] = time.monotonic() - started
    keep = os.environ.get("HPN_LAB_RESULTS")        # to record fixtures and instructor figures
    if keep:
        shutil.copytree(workdir, Path(keep) / lab.name, dirs_exist_ok=True)
    print(f"lab {lab.number}: {TIMES[lab.number]:.0f} s")
