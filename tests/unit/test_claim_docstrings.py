"""Claim modules' docstrings carry no figures of individual runs.

A claim module's docstring says the claim, the method, the expectation and why each threshold is
what it is; what particular runs measured belongs in that claim's section of docs/claims.md, where
it can be updated without touching code. This test guards against run logs creeping back in: it
fails if the docstring of scenarios/claims/*.py or scenarios/claims/*/__init__.py uses a phrase
that reports individual runs ("measured here", "runs here", "in eleven runs", "with --repeat 5
here"). It reads phrases, not numbers: thresholds and the model's figures stay welcome.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

CLAIMS = Path(__file__).resolve().parents[2] / "scenarios" / "claims"
MODULES = sorted([*CLAIMS.glob("*.py"), *CLAIMS.glob("*/__init__.py")])
NUMBER = r"(\d+|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
RUN_PHRASES = re.compile(
    rf"measured here|runs? here|\bin {NUMBER} (\w+ )?runs\b|--repeat \d+ here", re.IGNORECASE)


def test_there_are_claim_modules():
    assert len(MODULES) > 10


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(CLAIMS)))
def test_docstring_has_no_run_figures(path):
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    found = [m.group(0) for m in RUN_PHRASES.finditer(" ".join(doc.split()))]
    assert not found, f"{path.name}: run figures belong in docs/claims.md, found {found}"


def test_the_guard_catches_run_phrases():
    for text in ("Measured here (quick)", "in eleven runs here the ports", "in 8 such runs",
                 "Measured with --repeat 5 here: 4 reproduced"):
        assert RUN_PHRASES.search(text), text
