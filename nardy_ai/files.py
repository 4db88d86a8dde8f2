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
