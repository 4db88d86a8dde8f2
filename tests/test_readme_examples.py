"""The user docs' runnable examples (README.md and docs/*.md, marked ``<!-- example: NAME -->``)
run as written: the game core's batched loop, a Gymnasium episode and a vector-environment learner
(docs/environments.md)."""

from __future__ import annotations

import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def example(name: str) -> str:
    """The code of the one example called ``name`` in the docs (an error if none or several)."""
    found = []
    for path in DOCS:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        found += [(path, m.group(1)) for m in
                  re.finditer(r"<!-- example: %s -->\n```python\n(.*?)```" % re.escape(name), text, re.S)]
    assert len(found) == 1, f"the docs hold {len(found)} examples called '{name}': {[p for p, _ in found]}"
    return found[0][1]


@pytest.mark.parametrize("name,says", [("core", "white won"), ("gym", "points:"), ("vector", "points per game")])
def test_doc_example_runs(name, says, capsys):
    if name in ("gym", "vector"):
        pytest.importorskip("gymnasium")
    exec(compile(example(name), f"docs example {name}", "exec"), {})
    assert says in capsys.readouterr().out
