"""The repository stands on its own: every relative link in its Markdown resolves to a file of
the repository, and nothing points outside it (a fresh clone has no ../shared)."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def pages():
    return sorted(p for p in ROOT.rglob("*.md") if ".venv" not in p.parts and ".git" not in p.parts
                  and "node_modules" not in p.parts)


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_inside_the_repository(page):
    text = page.read_text()
    assert "../shared" not in text, f"{page.name} points outside the repository"
    for target in LINK.findall(text):
        assert not re.match(r"^[a-z]+:", target), f"{page.name}: {target} leaves the repository"
        if target.startswith("#"):
            continue                                     # an anchor on the same page
        path = (page.parent / target.split("#")[0]).resolve()
        assert path.is_relative_to(ROOT), f"{page.name}: {target} leaves the repository"
        assert path.exists(), f"{page.name}: {target} does not exist"


def test_code_points_nowhere_outside():
    for package in ("testbed", "controller", "scenarios"):
        for path in (ROOT / package).rglob("*.py"):
            assert "../shared" not in path.read_text(), path
