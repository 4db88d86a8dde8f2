"""Play notation (POSITIONS.md): reading a play such as ``bar/22* 13/8``, ``8/5(2)``,
``24/18/13`` or ``6/off`` and finding which legal afterstate it names.

Writing notation lives with the move generator (:func:`nardy_ai.movegen.format_play`), which
knows the checker steps.  Reading is lenient about the form (a checker's path may be written
in one move or hop by hop, the ``*`` marks are optional, ``(n)`` repeats a move) and strict
about the result: the play must end in one of the legal afterstates.
"""

from __future__ import annotations

import re

import numpy as np

from .board import BAR, OFF, OPP_BAR
from .errors import FormatError, IllegalPlay
from .movegen import generate
from .variants import Variant, get_variant

_MOVE = re.compile(r"^(bar|\d{1,2})((?:/(?:off|\d{1,2})\*?)+)(?:\((\d)\))?$")


def parse_play(text: str) -> list[tuple[int, int]]:
    """The checker moves of a play as ``(from, to)`` pairs of point numbers: 25 is the bar,
    0 is off.  Each hop of a multi-point move (``24/18/13``) is its own pair."""
    moves: list[tuple[int, int]] = []
    for token in text.lower().replace(",", " ").split():
        m = _MOVE.match(token)
        if not m:
            raise FormatError(f"cannot read move {token!r}: write from/to, e.g. 13/7, bar/22*, 6/off, 8/5(2)")
        start = 25 if m.group(1) == "bar" else int(m.group(1))
        hops = [0 if h.rstrip("*") == "off" else int(h.rstrip("*")) for h in m.group(2).split("/")[1:]]
        path = [start] + hops
        for a, b in zip(path, path[1:]):
            if not 1 <= a <= 25 or not 0 <= b <= 24 or b >= a:
                raise FormatError(f"move {token!r}: points run from 24 (or bar) down to 1 (or off)")
        for _ in range(int(m.group(3) or 1)):
            moves.extend(zip(path, path[1:]))
    return moves


def apply_moves(board: np.ndarray, moves: list[tuple[int, int]], variant: str | Variant) -> np.ndarray:
    """Apply moves literally (no rule checks beyond "a checker is there"): the board they
    lead to, hitting a lone opponent checker where one is landed on (short nardy)."""
    v = get_variant(variant)
    b = np.asarray(board, dtype=np.int8).copy()
    for a, c in moves:
        src = BAR if a == 25 else a - 1
        if b[src] <= 0:
            where = "on the bar" if a == 25 else f"on point {a}"
            raise IllegalPlay(f"no checker of the mover {where} for the move {('bar' if a == 25 else a)}/"
                              f"{'off' if c == 0 else c}")
        move_checker(b, a, c, v.hitting)
    return b


def move_checker(b, a: int, c: int, hits: bool) -> None:
    """Move one mover checker from point ``a`` (25: the bar) to point ``c`` (0: off) of the board
    ``b`` (a list or an int8 array, changed in place), hitting a lone opponent checker there when
    ``hits`` (BG-2/BG-3); the caller has checked that a checker stands on ``a``."""
    b[BAR if a == 25 else a - 1] -= 1
    if c == 0:
        b[OFF] += 1
        return
    if hits and b[c - 1] == -1:
        b[c - 1] = 0
        b[OPP_BAR] += 1
    b[c - 1] += 1


def find_play(board: np.ndarray, dice, text: str, variant: str | Variant):
    """The legal afterstate that ``text`` names for ``board`` and ``dice``.

    Returns ``(afterstate, canonical notation)``.  Raises :class:`IllegalPlay` naming the
    rule when the play is not legal (COM-1/COM-3 for a roll not used in full; otherwise the
    list of legal plays is given).
    """
    v = get_variant(variant)
    after = generate(np.asarray(board, np.int8)[None], np.asarray([dice]), v, notation=True)
    target = apply_moves(board, parse_play(text), v)
    hit = np.flatnonzero((after.boards == target).all(axis=1))
    if len(hit):
        return after.boards[hit[0]], after.plays[hit[0]]
    legal = after.plays
    needed = int(after.steps[0])
    used = len(parse_play(text))
    if used < needed:
        rule = "COM-1/COM-3: the roll must be used as fully as possible"
    elif needed == 0:
        rule = "COM-4: no checker can move, the roll is forfeited"
    else:
        rule = "not one of the legal plays"
    shown = ", ".join(repr(p) for p in legal[:12]) + (" ..." if len(legal) > 12 else "")
    raise IllegalPlay(f"illegal play {text!r} with {dice[0]}-{dice[1]} ({rule}); legal: {shown}")
