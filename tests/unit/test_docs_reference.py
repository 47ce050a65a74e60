"""The guide stays a guide: docs/testing.md is a reference for users (what each suite, lane and
bench does and how to read it), not a lab notebook, and the README quotes no single run.
Dated measurements and the commits they ran on belong in bench/results/journal.md."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_WORDS = 3000
# A commit hash as people paste it: one word of 7-40 hex digits with at least one digit and one
# letter (so "deadbeef", "facade" and "1500000" are words, "1e2945c" and "d3070ec" are hashes).
# A word ends at a space or at punctuation, not inside a name or an address (x.y, a:b, a-b).
HASH = re.compile(r"(?<![\w:-])(?<!\w\.)(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}"
                  r"(?![\w:-])(?!\.\w)", re.IGNORECASE)
NOT_HASHES = {"ed25519"}        # hex-looking words of the trade (an ssh key type)


def hashes(text: str) -> list[str]:
    """Every word of `text` that reads as a commit hash."""
    return [word for word in HASH.findall(text) if word.lower() not in NOT_HASHES]


@pytest.mark.parametrize("text", [
    "1e2945c", "ran on d3070ec.", "(commit 7472b4a)", "`89ce777`", "f244f1c,",
    "a3f9c0e1b2d4c5e6f7a8b9c0d1e2f3a4b5c6d7e8",
])
def test_a_commit_hash_is_caught(text):
    assert hashes(text)


@pytest.mark.parametrize("text", [
    "deadbeef facade accede decade effaced", "1500000 2,304 3,528 of 3,528", "2026-12-02",
    "C10 C16 HPN_MTU=4096 0.05 40-60 min", "02:77:00:00:00:01 10.77.0.1 fe80::1",
    "ab12 abc123", "sha256:" + "ab12" * 16, "x86_64 ipv4 bond0 p0s0h0-n0 veth12ab",
    "layer3+4 balance-xor mtu=9000 scale=0.0125", "ssh-keygen -t ed25519",
])
def test_ordinary_words_are_not_hashes(text):
    assert not hashes(text)


def test_testing_md_is_a_reference():
    words = len((ROOT / "docs" / "testing.md").read_text(encoding="utf-8").split())
    assert words < MAX_WORDS, (f"docs/testing.md has {words} words (< {MAX_WORDS}): dated runs go "
                               "to bench/results/journal.md, the latest into its figures table")


def test_readme_quotes_no_commit():
    found = hashes((ROOT / "README.md").read_text(encoding="utf-8"))
    assert not found, (f"README.md names commits {found}: point to docs/testing.md or "
                       "bench/results/journal.md instead")
