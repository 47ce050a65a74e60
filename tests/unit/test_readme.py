"""The README as a newcomer reads it (issue 40 item 9): no placeholder to fill in before a command
works, one count of the tour wherever it is counted, and "Using it" without a wall of internals
(the MTU, rcu_expedited and OVS send-buffer paragraph moved to docs/internals.md)."""
import re
from pathlib import Path

from testbed.scenario import catalog

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PLACEHOLDERS = re.compile(r"github\.com/YOU/|URL-OF-THIS-REPOSITORY|YOUR-(?:ORG|NAME|REPO)")
LONGEST_PARAGRAPH = 250     # words; the MTU paragraph was about 400


def section(text: str, title: str) -> str:
    """A `## title` section's text, up to the next `## ` heading."""
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", text, re.M | re.S)
    assert m, f"README has no section {title!r}"
    return m.group(1)


def tour_counts(text: str) -> list[str]:
    """Every phrase that counts the tour's scenarios: "the 12 tour scenarios", "13 of 13 reproduced"."""
    found = re.findall(r"\b\d+ tour scenarios\b|\btour of \d+\b", text)
    counted = r"\b\d+ of \d+\b(?=[^.|\n]{0,30}\b(?:reproduced|tour)\b)"
    found += [m.group(0) for m in re.finditer(counted, text)]
    return found


def test_no_placeholders_in_the_readme_or_the_docs():
    for path in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        assert not PLACEHOLDERS.findall(path.read_text()), path.name


def test_the_tour_is_counted_alike_everywhere():
    n = len(catalog.tour())
    for phrase in tour_counts(README.read_text()):
        assert int(re.findall(r"\d+", phrase)[-1]) == n, f"README: {phrase!r}, the tour has {n}"


def test_using_it_has_no_wall_of_internals():
    words = [len(p.split()) for p in re.split(r"\n\s*\n", section(README.read_text(), "Using it"))]
    assert max(words) <= LONGEST_PARAGRAPH


def test_the_checks_catch_what_the_issue_found():
    assert PLACEHOLDERS.search("git clone URL-OF-THIS-REPOSITORY hpn-testbed")
    assert tour_counts("the 12 tour scenarios; 11 of 12 reproduced") == ["12 tour scenarios", "11 of 12"]
