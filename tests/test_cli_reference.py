"""docs/cli.md is the argument parser's reference as it is now (nardy_ai/cli_reference.py)."""

from __future__ import annotations

import argparse
import difflib
import os

from nardy_ai.cli import build_parser
from nardy_ai.cli_reference import COMMAND, main, reference

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "cli.md")


def test_docs_cli_is_current():
    with open(PAGE, encoding="utf-8") as f:
        on_disk = f.read()
    now = reference()
    if on_disk != now:
        diff = "".join(list(difflib.unified_diff(on_disk.splitlines(True), now.splitlines(True),
                                                 "docs/cli.md", "the parser now", n=1))[:40])
        raise AssertionError(f"docs/cli.md is out of date with the parser; run: {COMMAND}\n{diff}")


def test_reference_names_every_command_option_and_default():
    text = reference()
    top = build_parser()
    subs = next(a for a in top._actions if a.nargs == argparse.PARSER)
    assert len(subs.choices) >= 10
    for name, parser in subs.choices.items():
        section = text.split(f"## nardy {name}\n", 1)[1].split("\n## ", 1)[0]
        assert f"(#nardy-{name})" in text
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}`" in section, (name, option)
            if action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
                assert f"`{action.default}`" in section, (name, action.dest, action.default)


def test_reference_does_not_depend_on_the_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    narrow = reference()
    monkeypatch.setenv("COLUMNS", "250")
    assert reference() == narrow


def test_reference_of_a_small_parser():
    p = argparse.ArgumentParser(prog="nardy", description="Demo.")
    sub = p.add_subparsers(dest="command")
    s = sub.add_parser("spin", help="spin the wheel | twice")
    s.add_argument("what", choices=["a", "b"])
    s.add_argument("--times", type=int, default=3, help="how often")
    s.add_argument("--names", nargs="+", required=True)
    s.add_argument("--loud", action="store_true")
    text = reference(p)
    assert "| [`nardy spin`](#nardy-spin) | spin the wheel \\| twice |" in text
    assert "nardy spin a|b [--times TIMES] --names NAMES [NAMES ...] [--loud]" in text
    assert "| `--times` | `TIMES` | `3` | how often |" in text
    assert "| `--names` | `NAMES [NAMES ...]` |  | (required) |" in text
    assert "| `--loud` |  |  |  |" in text


def test_main_writes_the_page(tmp_path, capsys):
    out = tmp_path / "cli.md"
    assert main([str(out)]) == 0
    assert out.read_text(encoding="utf-8") == reference()
    assert main([]) == 0
    assert capsys.readouterr().out == reference()
    assert main(["--bogus"]) == 2
