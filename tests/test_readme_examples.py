"""The README's runnable examples (issue #13: the environment API) run as written."""

from __future__ import annotations

import os
import re

import pytest

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


@pytest.mark.parametrize("name,says", [("core", "white won"), ("gym", "points:")])
def test_readme_example_runs(name, says, capsys):
    if name == "gym":
        pytest.importorskip("gymnasium")
    with open(README, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"<!-- example: %s -->\n```python\n(.*?)```" % name, text, re.S)
    assert m, f"README has no '{name}' example"
    exec(compile(m.group(1), f"README example {name}", "exec"), {})
    assert says in capsys.readouterr().out
