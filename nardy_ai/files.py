"""Files that survive a kill: whole-file atomic writes and the one-process-per-folder lock.

Every writer of the platform (tournament outputs, training logs and checkpoints, search-target
chunks, model cards, the SVG of ``nardy show``) goes through :func:`write_atomic` or
:func:`atomic_file`, so that a kill at any moment leaves either the old file or the new one,
never half of one.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO, Callable, Iterator, TypeVar

from .errors import NardyError

T = TypeVar("T")
K = TypeVar("K")


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike, error: type[NardyError] = NardyError,
                fsync: bool = True, what: str = "") -> Iterator[IO[bytes]]:
    """Open a temporary file beside ``path`` (binary) for the ``with`` block, then rename it
    over ``path`` (through a symbolic link, to the file it points at); the temporary file is
    removed when the block fails.  An ``OSError`` becomes ``error`` naming the path (after
    ``what``, e.g. ``"bear-off database "``)."""
    target = os.path.realpath(os.fspath(path))
    tmp = f"{target}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            yield f
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, target)
    except OSError as e:
        raise error(f"cannot write {what}{os.fspath(path)}: {e.strerror or e}") from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_atomic(path: str | os.PathLike, data: str | bytes, error: type[NardyError] = NardyError,
                 fsync: bool = True) -> None:
    """Write ``data`` (text as UTF-8) as the whole of ``path`` with :func:`atomic_file`.  A path
    that exists and is no regular file (``/dev/stdout``, a pipe, a device) is written to as it
    is, never replaced."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if os.path.exists(path) and not os.path.isfile(path):
        try:
            with open(path, "wb") as f:
                f.write(raw)
        except OSError as e:
            raise error(f"cannot write {os.fspath(path)}: {e.strerror or e}") from None
        return
    with atomic_file(path, error, fsync) as f:
        f.write(raw)


def read_text(path: str | os.PathLike, error: type[NardyError] = NardyError) -> str:
    """The whole of the UTF-8 text file ``path``; an ``OSError`` becomes ``error`` naming it."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise error(f"cannot read {path}: {e.strerror}") from None


def read_at_most(source: IO | str | os.PathLike, limit: int, name: str, too_long: str,
                 error: type[NardyError] = NardyError, too_long_error: type[NardyError] | None = None):
    """What ``source`` holds (an open file: text or bytes as it reads; a path: bytes), refusing
    an endless or huge one (``/dev/zero``): more than ``limit`` characters or bytes is
    ``too_long_error`` (default ``error``) ``"NAME TOO_LONG"``; a failed open or read is
    ``error`` naming ``name``."""
    try:
        if isinstance(source, (str, os.PathLike)):
            with open(source, "rb") as f:
                data = f.read(limit + 1)
        else:
            data = source.read(limit + 1)
    except OSError as e:
        raise error(f"cannot read {name}: {e.strerror}") from None
    if len(data) > limit:
        raise (too_long_error or error)(f"{name} {too_long}")
    return data


def make_folder(folder: str | os.PathLike, error: type[NardyError] = NardyError) -> None:
    """Create ``folder`` and its parents if missing; an ``OSError`` becomes ``error`` naming it."""
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise error(f"cannot create {folder}: {e.strerror}") from None


class FolderLock:
    """One process at a time in a run folder (a tournament's, a training run's): two writers
    would play the same games or interleave one file.  An ``flock`` on ``FOLDER/.lock``, so the
    system releases it when the process ends, however it ends (kill -9 included).  Taken on
    creation (``error`` raised at once when another process holds it), released by
    :meth:`release`, at the end of a ``with`` block, or when the object is collected."""

    def __init__(self, folder: str | os.PathLike, what: str, error: type[NardyError] = NardyError):
        self.file = None
        try:
            import fcntl
        except ImportError:                   # not POSIX: no lock
            return
        try:
            self.file = open(Path(folder) / ".lock", "a")
        except OSError as e:
            raise error(f"cannot lock {folder}: {e.strerror}") from None
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.release()
            raise error(f"another {what} is running in {folder}") from None

    @property
    def held(self) -> bool:
        return self.file is not None

    def release(self) -> None:
        if self.file is not None:
            self.file.close()                 # closing the file drops the lock
            self.file = None

    def __enter__(self) -> FolderLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def read_appended(path: str | os.PathLike, parse: Callable[[str], T], what: str,
                  error: type[NardyError] = NardyError) -> list[T]:
    """The parsed lines of an append-only file (one JSON line per record: games, analyses), in
    order; no file gives none.  Blank lines are skipped and a last line cut short by a kill is
    dropped; any other line that ``parse`` refuses (ValueError, KeyError, TypeError,
    AttributeError or a NardyError) raises ``error`` naming the file, the line and ``what`` a
    line should be."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return []
    except OSError as e:
        raise error(f"cannot read {path}: {e.strerror}") from None
    lines = text.split("\n")
    out: list[T] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(parse(line))
        except (AttributeError, KeyError, TypeError, ValueError, NardyError) as e:
            if n == len(lines):
                continue                       # the torn tail of an interrupted write
            raise error(f"{path} line {n}: not {what}: {e}") from None
    return out


def append_durably(f: IO[str], lines: list[str]) -> None:
    """Append ``lines`` (each ending in a newline) to the open append-only file ``f`` and force
    them to disk, so that a kill loses no record already reported as done."""
    f.write("".join(lines))
    f.flush()
    os.fsync(f.fileno())


def read_appended_first(path: str | os.PathLike, parse: Callable[[str], tuple[K, T]], what: str,
                        error: type[NardyError] = NardyError) -> dict[K, T]:
    """:func:`read_appended` for a file of keyed records (``parse`` gives ``(key, record)``):
    ``{key: record}``, the first line of a key kept (a later one repeats a replayed write)."""
    out: dict[K, T] = {}
    for key, record in read_appended(path, parse, what, error):
        out.setdefault(key, record)
    return out


def cut_torn_tail(path: str | os.PathLike, error: type[NardyError] = NardyError) -> None:
    """Drop a last line without its newline (a write cut short by a kill) from the append-only
    file ``path``, if it exists, so that appends start clean; an ``OSError`` becomes ``error``."""
    if not os.path.exists(path):
        return
    try:
        with open(path, "rb+") as f:
            data = f.read()
            if data and not data.endswith(b"\n"):
                f.truncate(data.rfind(b"\n") + 1)
    except OSError as e:
        raise error(f"cannot repair {path}: {e.strerror}") from None
