"""The user's guide stays true (README.md, docs/*.md): every command of its shell blocks is known,
every `hpn-testbed` line parses with the CLI's own parser and passes, without root, the checks
its subcommand makes before it creates anything; the fabric picture names the model's switches;
no link leaves the repository and every link's target (file and heading) exists.

Which commands are not run, and why, is in tests/doc_commands.py; the cheap ones are run as root
by tests/integration/test_doc_commands.py.
"""
from __future__ import annotations

import glob
import re
from pathlib import Path

import pytest

from testbed.cli import build_parser, main
from testbed.core import interrupts
from tests import doc_commands

ROOT = doc_commands.ROOT
COMMANDS = doc_commands.commands()
TESTBED = [c for c in COMMANDS if c.testbed]
OTHERS = [c for c in COMMANDS if not c.testbed]


def expanded(argv: list[str]) -> list[str]:
    """The arguments as a shell in the repository would pass them (globs expanded)."""
    out = []
    for word in argv:
        if out and out[-1] == "--custom":      # a plug-in's path: the repository's, from any directory
            word = str(ROOT / word)
        elif word.startswith("topology="):     # so is a topology file's (the file family)
            word = f"topology={ROOT / word.split('=', 1)[1]}"
        out += sorted(glob.glob(str(ROOT / word))) if "*" in word else [word]
    return out


def test_the_guide_shows_its_two_commands_and_many_more():
    shown = [c.text for c in COMMANDS if c.doc == "README.md"]
    assert shown[:2] == ["make demo", "make test"]
    assert len(TESTBED) >= 40 and {c.doc for c in TESTBED} >= {"README.md", "docs/experiments.md"}


@pytest.mark.parametrize("cmd", OTHERS, ids=str)
def test_every_other_command_says_why_it_is_not_run(cmd):
    assert doc_commands.not_run_reason(cmd), f"{cmd}: list it in tests/doc_commands.py NOT_RUN, with why"


@pytest.fixture
def plugins_undone(registries_restored):
    """What a command's --custom plug-ins register is gone after its test (as after its process)."""
    from testbed.core import plugins
    return plugins


@pytest.mark.parametrize("cmd", TESTBED, ids=str)
def test_every_testbed_command_parses_and_passes_the_checks_without_root(cmd, tmp_path, monkeypatch,
                                                                         plugins_undone):
    """The parse (argparse, one line and exit 2 on an error), then what the subcommand checks
    before anything is created: up's fabric, routing and wiring against the model; run's scenario
    names and parameters, or the experiment files (`--check`, run here)."""
    argv = expanded(cmd.argv)
    monkeypatch.chdir(ROOT)            # the guide's paths are the repository's; nothing is written
    plugins_undone.load_all(plugins_undone.paths_in(argv))     # as main() does, before the parser
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:                  # --version exits 0 after printing
        assert e.code == 0 and argv == ["--version"], f"{cmd}: exit {e.code}"
        return
    monkeypatch.chdir(ROOT)            # the guide's paths are the repository's; nothing is written
    monkeypatch.setattr(interrupts, "install", lambda: None)
    if args.command == "up":
        from testbed.cli import up
        up.prepare(args)
    elif args.command == "run" and args.check:
        assert main(argv) == 0, str(cmd)
    elif args.command == "run":
        from testbed.cli import runs
        runs.check_output("--out", args.out, directory=True)
        assert runs.chosen_runs(args)
    elif args.command == "job":           # the file read and every rank placed, as --check does
        from testbed.experiments import jobfile
        jobfile.load(args.file)
    elif args.command == "topo":
        monkeypatch.chdir(tmp_path)    # its pictures go here
        assert main(argv) == 0, str(cmd)


@pytest.mark.parametrize("cmd", TESTBED, ids=str)
def test_root_is_shown_where_it_is_needed(cmd):
    """`sudo` on every command that needs root; none on the model's and the checkers'."""
    needs = doc_commands.parse_only(cmd) is not None or cmd.argv[0] in ("ps", "clean", "up", "doctor") \
        or cmd.argv[:2] == ["servers", "list"]
    assert cmd.sudo == needs, f"{cmd}: {'add' if needs else 'drop'} sudo"


@pytest.mark.parametrize("cmd", [c for c in TESTBED if doc_commands.parse_only(c)], ids=str)
def test_what_is_not_run_names_the_tests_that_cover_it(cmd):
    reason = doc_commands.parse_only(cmd)
    assert not reason.startswith("unclassified"), f"{cmd}: {reason}"
    named = re.findall(r"(test_\w+(?:\*)?\.py)", reason)
    assert named, reason
    for name in named:
        assert list((ROOT / "tests" / "integration").glob(name)), f"{cmd}: no tests/integration/{name}"


def picture() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## The HPN fabric"):]
    return section[section.index("```text"):section.index("```", section.index("```text") + 3)]


def test_the_fabric_picture_is_the_default_hpn_pod_0_and_the_core():
    from testbed.model import make_fabric
    fab = make_fabric("hpn", {})
    drawn = set(re.findall(r"\b(?:p\d+s\d+r\d+t\d+|p\d+a\d+n\d+|c\d+)\b", picture()))
    assert drawn == {s for s in fab.switches if s.startswith(("p0", "c"))}
    summary = fab.summary()
    counts = f"{summary['hosts']} hosts, {summary['nics']} NICs, {summary['switches']} switches, " \
             f"{summary['links']['host'] + summary['links']['switch']} links"
    assert counts in (ROOT / "README.md").read_text()


LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.DOTALL | re.MULTILINE)
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}


PAGES = [*doc_commands.docs(), ROOT / "labs" / "README.md"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_stays_in_the_repository_and_finds_its_target(page):
    for target in LINK.findall(page.read_text()):
        assert "://" not in target and not target.startswith("/"), \
            f"{page.name}: {target} leaves the repository"
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        assert where.exists() and ROOT in where.parents or where == ROOT, \
            f"{page.name}: {target} does not exist"
        if anchor:
            assert where.suffix == ".md" and anchor in anchors(where), f"{page.name}: no heading for {target}"


def section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def test_the_contents_list_every_section_and_the_quick_start_fits_a_screen():
    text = (ROOT / "README.md").read_text()
    listed = set(re.findall(r"\]\(#([^)]+)\)", section("Contents")))
    assert {slug(h) for h in re.findall(r"^## (.+)$", text, re.MULTILINE)} - {"contents"} <= listed
    quick = section("Quick start").split("\n### ")[0]
    assert len(quick.strip().splitlines()) <= 25
