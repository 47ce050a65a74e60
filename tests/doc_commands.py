"""The commands the user's guide shows (README.md and docs/*.md), read from their fenced shell
blocks, for the tests that keep the guide true: tests/unit/test_doc_commands.py (every line
parses, every `hpn-testbed` line passes the checks that need no root) and
tests/integration/test_doc_commands.py (the cheap ones run, as root, and exit 0).

A shell block is ```sh (or bash, shell); ```text blocks are sample output and are not read.
A line may hold several commands (`a && b`, `a; b`); each is one Command. `sudo`, environment
assignments and the venv's path (`.venv/bin/`) are not part of what is checked. What a test
does not run is said here, with the reason: NOT_RUN for every other program's command (a new
one fails the unit test until it is listed), and `parse_only` for the `hpn-testbed` commands
that build a fabric or change the machine (their parse is still checked, and the test named
covers what they do).
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)
SHELL_BLOCKS = ("sh", "bash", "shell")
SEPARATORS = (";", "&&", "||", "|")

# Commands of other programs the guide shows, by their first words: why no test runs them.
NOT_RUN: dict[str, str] = {
    "make demo": "the whole tour, 4-5 min of an idle machine (the tour's scenarios run one by one in "
                 "tests/integration/test_scenario_*.py; .ci/run runs `make test`)",
    "make test": "the test suite itself, of which this test is a part (.ci/run runs it)",
    "make test-fast": "the unit and integration tests, of which this test is a part",
    "make test-lane": "the full-kernel tests (`make test` runs them)",
    "make test-distro": "a fresh Debian root by debootstrap, 2.5-3.5 min (docs/testing.md, distro lane)",
    "make tour-lane": "the tour under QEMU, about 40 min (docs/testing.md)",
    "make bench": "benchmarks, minutes of an idle machine (bench/*.py)",
    "make clean": "runs `hpn-testbed clean`, which the integration test runs itself",
    "vagrant": "needs Vagrant and a hypervisor; tests/integration/test_vagrant.py validates the "
               "Vagrantfile and runs vagrant/provision.sh here",
    "apt-get": "installs or purges this machine's packages (the distro lane runs the install on a "
               "fresh root: tests/distro/run)",
    "git clone": "needs the repository's URL and the network (the distro lane clones HEAD)",
    "cd": "changes directory only (after a `git clone` the guide shows)",
    "systemctl": "would stop Open vSwitch for every user of the machine",
    "rm": "deletes the install (docs/install.md, undoing it)",
    "pytest": "a user's test run by the pytest plugin: tests/integration/test_pytest_plugin.py runs "
              "examples/test_my_fabric.py in a fresh pytest",
}


@dataclass(frozen=True)
class Command:
    doc: str                # the page, relative to the repository
    text: str               # the command as shown, without its comment
    words: tuple[str, ...]  # its words, `sudo`, VAR=value and the program's path left out
    sudo: bool

    @property
    def testbed(self) -> bool:
        return bool(self.words) and Path(self.words[0]).name == "hpn-testbed"

    @property
    def argv(self) -> list[str]:
        """The `hpn-testbed` arguments (after the program)."""
        return list(self.words[1:])

    def __str__(self) -> str:
        return f"{self.doc}: {self.text}"


def docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(page: Path) -> list[str]:
    return [m[2] for m in FENCE.finditer(page.read_text()) if m[1] in SHELL_BLOCKS]


def split(line: str) -> list[list[str]]:
    """A shell line's simple commands, as words (comments dropped; `a && b` is two)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split, lexer.commenters = True, "#"
    commands, current = [], []
    for token in lexer:
        if token in SEPARATORS:
            commands.append(current)
            current = []
        else:
            current.append(token)
    return [c for c in [*commands, current] if c]


def command(doc: str, words: list[str]) -> Command:
    sudo = bool(words) and words[0] == "sudo"
    words = words[1:] if sudo else words
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        words = words[1:]
    return Command(doc, " ".join(shlex.quote(w) for w in words), tuple(words), sudo)


def commands() -> list[Command]:
    """Every command of every shell block of the guide, in order."""
    found = []
    for page in docs():
        doc = str(page.relative_to(ROOT))
        for block in blocks(page):
            for line in block.splitlines():
                found += [command(doc, words) for words in split(line)]
    return found


def not_run_reason(cmd: Command) -> str | None:
    """Why a command of another program is not run (None: it is not listed)."""
    for prefix, reason in NOT_RUN.items():
        if list(cmd.words[:len(prefix.split())]) == prefix.split():
            return reason
    return None


# `hpn-testbed` subcommands a test may run anywhere, as root, in seconds, changing nothing but
# files in its directory (`clean` removes only what dead runs left; `ps`, `servers list` read)
CHEAP = ("topo", "list", "doctor", "lab", "ps", "clean", "--version")
# and the quick start's one bring-up, run as shown: the default HPN up, checked, torn down (~10 s)
QUICK_START_UP = ["up", "hpn", "--check"]


def parse_only(cmd: Command) -> str | None:
    """Why an `hpn-testbed` command is checked (parsed, validated) but not run; None: it runs."""
    argv = cmd.argv
    head = argv[0] if argv else ""
    if head in CHEAP or argv[:2] == ["servers", "list"] or argv == QUICK_START_UP:
        return None
    if head in ("run", "job") and "--check" in argv:
        return None
    if head in ("up", "run") and "--custom" in argv:
        return ("builds a plug-in's fabric or runs its scenario, as root: examples/'s family, policy "
                "and scenario are brought up and run by tests/integration/test_outside_tree.py (from "
                "a fresh venv) and test_twotier.py")
    return {
        "up": "builds a fabric, as root on a free machine (its options are checked against the "
              "model without root by the unit test; tests/integration/test_bringup.py, test_cli.py, "
              "test_miswire.py and test_policies.py bring the families up with them)",
        "run": "runs scenarios or an experiment, a minute to several (tests/integration/"
               "test_scenario_*.py, test_scenarios_*.py, test_experiments.py)",
        "job": "builds a fabric and runs a job's ranks (tests/integration/test_jobs.py)",
        "trace": "needs a running fabric (tests/integration/test_shell.py, test_routing.py)",
        "capture": "needs a running fabric (tests/integration/test_capture.py)",
        "link": "needs a running fabric (tests/integration/test_impair.py)",
        "top": "needs a running fabric (tests/integration/test_top.py)",
        "servers": "starts or removes namespace servers, installing openssh the first time "
                   "(tests/integration/test_servers.py)",
    }.get(head, "unclassified: add it to tests/doc_commands.py")
