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


def test_read_appended_first_keeps_the_first_record_of_a_key(tmp_path):
    from nardy_ai.files import read_appended_first
    path = tmp_path / "a.jsonl"
    path.write_text('{"k": "a", "v": 1}\n{"k": "b", "v": 2}\n{"k": "a", "v": 3}\n')
    got = read_appended_first(path, lambda line: (json.loads(line)["k"], json.loads(line)["v"]), "a record")
    assert got == {"a": 1, "b": 2}


def test_cut_torn_tail_drops_only_a_last_line_without_its_newline(tmp_path):
    from nardy_ai.files import cut_torn_tail
    path = tmp_path / "a.jsonl"
    cut_torn_tail(path)                                  # no file: nothing to do, nothing made
    assert not path.exists()
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n{"c"')
    cut_torn_tail(path)
    assert path.read_bytes() == b'{"a": 1}\n{"b": 2}\n'
    cut_torn_tail(path)                                  # a whole file stays as it is
    assert path.read_bytes() == b'{"a": 1}\n{"b": 2}\n'


def test_make_folder_names_the_folder_it_cannot_create(tmp_path):
    from nardy_ai.files import make_folder
    make_folder(tmp_path / "x" / "y")
    assert (tmp_path / "x" / "y").is_dir()
    (tmp_path / "file").write_text("")
    with pytest.raises(FormatError, match=r"cannot create .*file/sub: Not a directory"):
        make_folder(tmp_path / "file" / "sub", FormatError)


def test_read_text_names_the_file_it_cannot_read(tmp_path):
    from nardy_ai.files import read_text
    (tmp_path / "a.txt").write_text("é\n", encoding="utf-8")
    assert read_text(tmp_path / "a.txt") == "é\n"
    with pytest.raises(FormatError, match=r"^cannot read .*none\.txt: No such file or directory$"):
        read_text(tmp_path / "none.txt", FormatError)
