"""Every rule id of RULES.md is cited by at least one test (the brief's bar for the engine)."""

import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
RULE_ID = re.compile(r"\b(?:BG|LN|COM|CUBE)-[A-Z0-9]+\b")


def _rules_md() -> Path | None:
    for base in (TESTS.parent, *TESTS.parents):
        cand = base / "shared" / "RULES.md"
        if cand.exists():
            return cand
    return None


def test_every_rule_id_is_cited_by_a_test():
    rules = _rules_md()
    if rules is None:
        pytest.skip("../shared/RULES.md is not beside this checkout")
    ids = set(RULE_ID.findall(rules.read_text(encoding="utf-8")))
    assert len(ids) >= 25
    cited = set()
    for f in TESTS.glob("test_*.py"):
        if f.name != Path(__file__).name:
            cited |= set(RULE_ID.findall(f.read_text(encoding="utf-8")))
    assert sorted(ids - cited) == []
