"""nardy_ai.files.read_at_most: the capped read that the training config and the CLI's position
files share (an endless or huge file is refused with a one-line error naming it)."""

from __future__ import annotations

import io

import pytest

from nardy_ai.errors import FormatError, NardyError
from nardy_ai.files import read_at_most


class Refused(NardyError):
    pass


def test_a_path_is_read_as_bytes_up_to_the_limit(tmp_path):
    path = tmp_path / "c.toml"
    path.write_bytes(b"x" * 10)
    assert read_at_most(path, 10, "config c", "is too long") == b"x" * 10
    assert read_at_most(str(path), 10, "config c", "is too long") == b"x" * 10


def test_an_open_file_is_read_as_it_reads():
    assert read_at_most(io.StringIO("abc"), 3, "stdin", "is too long") == "abc"


@pytest.mark.parametrize("source, error, message", [
    (lambda p: p, Refused, "config c is longer than 9 bytes"),
    (lambda p: io.StringIO("x" * 10), FormatError, "config c is longer than 9 bytes"),
], ids=["path", "open file"])
def test_more_than_the_limit_is_the_too_long_error_naming_the_file(tmp_path, source, error, message):
    path = tmp_path / "c.toml"
    path.write_bytes(b"x" * 10)
    too_long_error = FormatError if error is FormatError else None
    with pytest.raises(error, match=f"^{message}$"):
        read_at_most(source(path), 9, "config c", "is longer than 9 bytes", Refused, too_long_error)


def test_a_file_that_cannot_be_read_is_the_error_naming_it(tmp_path):
    with pytest.raises(Refused, match="^cannot read config none: No such file or directory$"):
        read_at_most(tmp_path / "none.toml", 9, "config none", "is too long", Refused, FormatError)
    with pytest.raises(Refused, match="^cannot read folder: Is a directory$"):
        read_at_most(tmp_path, 9, "folder", "is too long", Refused)
