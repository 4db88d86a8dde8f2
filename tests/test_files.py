"""nardy_ai.files: the one reader of append-only JSON-lines files (games.jsonl, analysis.jsonl)."""

import json

import pytest

from nardy_ai.errors import FormatError
from nardy_ai.files import read_appended


def test_missing_file_reads_as_empty(tmp_path):
    assert read_appended(tmp_path / "none.jsonl", json.loads, "a line") == []


def test_blank_lines_are_skipped_and_a_torn_last_line_dropped(tmp_path):
    p = tmp_path / "g.jsonl"
    p.write_text('{"a": 1}\n\n{"a": 2}\n{"a": 3', encoding="utf-8")      # killed mid-write
    assert [d["a"] for d in read_appended(p, json.loads, "a line")] == [1, 2]


def test_a_bad_line_before_the_end_names_the_file_line_and_what_was_expected(tmp_path):
    p = tmp_path / "g.jsonl"
    p.write_text('{"a": 1}\nnot json\n{"a": 3}\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"g\.jsonl line 2: not a tournament game"):
        read_appended(p, json.loads, "a tournament game", FormatError)


def test_a_parse_that_refuses_a_field_counts_as_a_bad_line(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_text('{"key": 1}\n{"other": 2}\n{"key": 3}\n', encoding="utf-8")
    with pytest.raises(FormatError, match="line 2"):
        read_appended(p, lambda s: json.loads(s)["key"], "an analysis line", FormatError)
    p.write_text('{"key": 1}\n{"key": 3}\n', encoding="utf-8")
    assert read_appended(p, lambda s: json.loads(s)["key"], "an analysis line") == [1, 3]
