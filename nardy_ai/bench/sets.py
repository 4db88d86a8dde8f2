"""The files of the benchmarks' versioned position sets (``nardy_ai/data/*_v<N>.jsonl``): a
header line ``{"header": {...}}`` naming how the positions were drawn and valued, then one
POSITIONS.md position per line with what the set stores for it.  :func:`read_set` reads one;
the evaluator set (:mod:`nardy_ai.bench.evaluators`) and the cube set
(:mod:`nardy_ai.bench.cube`) each say what a line holds."""

from __future__ import annotations

import os
from typing import Any, Callable

from ..board import numbered_lines, parse_json
from ..errors import FormatError, NardyError


def require_set(path: str, what: str, variant_id: str, how: str = "") -> None:
    """Refuse a missing set file ``path``: a one-line :class:`~nardy_ai.errors.FormatError`
    naming the ``what`` (e.g. ``"cube position set"``) of the variant and ``how`` to build one."""
    if not os.path.exists(path):
        raise FormatError(f"no {what} for {variant_id}: {path} is missing{how}")


def read_set(path: str, what: str, position: Callable[[dict], Any]) -> tuple[dict, list]:
    """``(header, [position(obj) for every position line])`` of the set file ``path`` (a
    ``what``, e.g. ``"cube position set"``, in the messages): blank lines skipped, and a
    one-line :class:`~nardy_ai.errors.FormatError` naming the file and the line for an
    unreadable file, a line too long to be a position (``/dev/zero``), a first line that is
    not the header, a position that ``position`` refuses (any :class:`NardyError`), or a file
    without positions."""
    header, out = None, []
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            for n, line in numbered_lines(f):
                if line is None:                      # endless or huge (/dev/zero): stop here
                    raise FormatError(f"{path} line {n}: longer than a {what}'s line can be")
                if not line.strip():
                    continue
                try:
                    obj = parse_json(line)
                    if header is None:
                        if not isinstance(obj, dict) or not isinstance(obj.get("header"), dict):
                            raise FormatError("the first line must be the set's header {\"header\": {...}}")
                        header = obj["header"]
                    else:
                        out.append(position(obj))
                except NardyError as e:
                    raise FormatError(f"{path} line {n}: {e}") from None
    except OSError as e:
        raise FormatError(f"cannot read {path}: {e.strerror}") from None
    if header is None or not out:
        raise FormatError(f"{path}: not a {what} (a header line, then positions)")
    return header, out
