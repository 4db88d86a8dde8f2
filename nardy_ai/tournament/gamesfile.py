"""The games file of a tournament folder: one JSON line per game, append-only, read back on resume (see :mod:`nardy_ai.tournament`)."""

from __future__ import annotations

import json
import os

from ..board import parse_json
from ..errors import FormatError
from ..files import read_appended_first
from ..game import GameRecord


def game_line(a: str, b: str, index: int, record: GameRecord) -> str:
    """One line of ``games.jsonl`` (no newline)."""
    d = json.loads(record.to_json())
    return json.dumps({"pairing": [a, b], "index": index, **d}, separators=(",", ":"), ensure_ascii=False)


def read_games(path: str | os.PathLike) -> dict[tuple[str, str, int], GameRecord]:
    """The games of a ``games.jsonl``, keyed ``(A, B, index)``.  A game that appears twice is
    counted once (the first line); a last line cut short by a kill (no newline) is ignored; any
    other bad line raises :class:`FormatError` naming its line number."""
    def parse(line: str) -> tuple[tuple[str, str, int], GameRecord]:
        d = parse_json(line)
        (a, b), index = d.pop("pairing"), int(d.pop("index"))
        return (str(a), str(b), index), GameRecord.from_json(json.dumps(d))

    return read_appended_first(path, parse, "a tournament game", FormatError)
