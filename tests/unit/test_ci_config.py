"""CI's configurations kept honest: the GitHub workflow runs what `.ci/run` runs, `.ci/run` runs
the README's test command with CI=true, and the workflow installs nothing that
scripts/install.sh does not know (so a fresh machine with only the README's command gets the
same packages as CI)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"


def run_steps(text: str) -> list[str]:
    """The shell of every `run:` step (single line or block), in order."""
    steps, block = [], None
    for line in text.splitlines():
        m = re.match(r"^(\s*)(?:- )?run:\s*(\|)?\s*(.*)$", line)
        if m:
            block = None
            if m.group(2):
                block = (len(m.group(1)), [])
                steps.append(block[1])
            else:
                steps.append([m.group(3)])
        elif block is not None and (not line.strip() or len(line) - len(line.lstrip()) > block[0]):
            block[1].append(line.strip())
        else:
            block = None
    return ["\n".join(s).strip() for s in steps]


def install_sh_packages() -> set[str]:
    text = (ROOT / "scripts" / "install.sh").read_text()
    arrays = re.findall(r"^[A-Z_]*PKGS=\(([^)]*)\)", text, re.M)
    assert arrays, "scripts/install.sh lists no *_PKGS=(...)"
    return {p for a in arrays for p in a.split()}


def readme_test_command() -> str:
    m = re.search(r"^sudo (make \S+)\s+# install what is missing, run the unit",
                  (ROOT / "README.md").read_text(), re.M)
    assert m, "README names no test command"
    return m.group(1)


def test_ci_run_runs_the_readme_test_command_with_ci_true():
    text = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^export CI=true\b", text, re.M)
    assert re.search(rf"^(exec )?{re.escape(readme_test_command())}$", text, re.M)


def test_the_workflow_runs_ci_run_and_nothing_else_that_installs():
    steps = run_steps(WORKFLOW.read_text())
    assert "sudo bash .ci/run" in steps, steps
    known = install_sh_packages()
    for step in steps:
        for m in re.finditer(r"apt-get[^\n]*\binstall\b([^\n|;&]*)", step):
            pkgs = [w for w in m.group(1).split() if not w.startswith("-")]
            assert set(pkgs) <= known, f"the workflow installs {pkgs}, which scripts/install.sh does not know"


def test_the_step_reader_sees_blocks_and_lines():
    text = ("steps:\n  - run: echo one\n  - name: x\n    run: |\n      apt-get install -y foo\n"
            "      make test\n  - uses: y\n")
    assert run_steps(text) == ["echo one", "apt-get install -y foo\nmake test"]
