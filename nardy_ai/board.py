"""Positions as arrays: the one layout every module uses, start positions, flipping,
validation, pip counts and the JSON position format of POSITIONS.md.

Array layout (``int8``, last axis of length ``BOARD_SIZE`` = 28), always from the point of view
of the player on roll (the *mover*, RULES.md §0):

=========  =====================================================================
index      meaning
=========  =====================================================================
0 .. 23    point 1 .. 24: positive = mover's checkers, negative = opponent's
24 (BAR)   mover's checkers on the bar (always 0 in long nardy)
25         opponent's checkers on the bar
26 (OFF)   mover's checkers borne off
27         opponent's checkers borne off
=========  =====================================================================

The mover travels from point 24 towards point 1 and bears off below 1.
"""

from __future__ import annotations

import json
import math
import re
from typing import IO, Any, Iterator

import numpy as np

from .errors import FormatError, InvalidDice, InvalidPosition
from .variants import Variant, get_variant

BOARD_SIZE = 28
BAR, OPP_BAR, OFF, OPP_OFF = 24, 25, 26, 27
CHECKERS = 15


def _bear_off_sources() -> np.ndarray:
    table = np.zeros(7 << 6, np.uint32)
    for d in range(1, 7):
        for home in range(1, 64):
            table[d << 6 | home] = (home & (1 << (d - 1))) or (
                1 << (home.bit_length() - 1) if home >> (d - 1) == 0 else 0)
    return table


#: COM-5 bear-off sources of the move generators and the long-nardy features, indexed by
#: ``die << 6 | home bits`` (bit i: the mover holds point i + 1): the bit of the checker on point
#: ``die``, or of the highest checker when none stands on ``die`` or higher; 0 when a checker
#: above ``die`` must move instead.
BEAR_OFF_SOURCES = _bear_off_sources()
#: Multipliers of the 64-bit hash of a board row padded to 32 bytes, whose top bits order the
#: move generators' de-duplication (the compiled generator keeps the NumPy path's order).
BOARD_HASH_KEYS = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                            0xD6E8FEB86659FD93], dtype=np.uint64)
#: For each mover point index i, the index of the same physical point in the opponent's
#: numbering: short nardy 25 - p (BG-1), long nardy ((p + 11) mod 24) + 1 (LN-1).
_SHORT_MIRROR = np.arange(23, -1, -1)
_LONG_MIRROR = (np.arange(24) + 12) % 24


def mirror_index(variant: Variant) -> np.ndarray:
    """Index map: point index ``i`` of the mover is point index ``mirror[i]`` of the opponent."""
    return _LONG_MIRROR if variant.is_long else _SHORT_MIRROR


def both_sides_points(boards: np.ndarray, variant: str | Variant) -> np.ndarray:
    """``(2M, 24)`` int8: the points of ``M`` boards seen by each side, its own checkers
    positive: rows ``[0, M)`` by the mover (the boards' points), rows ``[M, 2M)`` by the
    opponent (the points of :func:`flip`)."""
    pts = np.asarray(boards)[:, :24]
    m = len(pts)
    out = np.empty((2 * m, 24), np.int8)
    out[:m] = pts
    np.negative(pts[:, mirror_index(get_variant(variant))], out=out[m:])
    return out


def start_board(variant: str | Variant) -> np.ndarray:
    """The start position (BG-1 / LN-1) as a ``(28,)`` int8 array."""
    v = get_variant(variant)
    b = np.zeros(BOARD_SIZE, dtype=np.int8)
    b[:24] = v.start
    return b


def flip(boards: np.ndarray, variant: str | Variant) -> np.ndarray:
    """The same positions seen by the other player (batched over leading axes)."""
    v = get_variant(variant)
    boards = np.asarray(boards)
    out = np.empty_like(boards)
    out[..., :24] = -boards[..., :24][..., mirror_index(v)]
    out[..., BAR] = boards[..., OPP_BAR]
    out[..., OPP_BAR] = boards[..., BAR]
    out[..., OFF] = boards[..., OPP_OFF]
    out[..., OPP_OFF] = boards[..., OFF]
    return out


#: Odd 64-bit multipliers of the row hash of :func:`distinct_boards` (fixed: results repeat).
_HASH_MULTIPLIERS = np.random.default_rng(0x6E61726479).integers(1, 1 << 62, 7, dtype=np.uint64) * 2 + 1


def distinct_boards(boards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``(M, 28)`` boards and where each row went: ``(unique, inverse)``
    with ``unique[inverse] == boards``, rows of ``unique`` in order of first appearance.

    What a search values once instead of several times: the replies to different rolls of one
    position often coincide (a single checker running the dice's sum), a quarter of the
    afterstates at the second ply of a long-nardy search.  Rows are hashed to 64 bits and the
    hashes sorted (several times faster than comparing 28-byte rows); the result is checked
    row by row, and a hash collision falls back to the exact byte-row comparison."""
    b = np.ascontiguousarray(boards, np.int8)
    if len(b) < 2:
        return b.copy(), np.zeros(len(b), np.intp)
    words = b.reshape(len(b), -1).view(np.uint32).astype(np.uint64)
    h = words @ _HASH_MULTIPLIERS[:words.shape[1]]      # wraps modulo 2**64
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    if not np.array_equal(b[first[inverse]], b):         # a collision: compare the rows
        rows = b.reshape(len(b), -1).view(np.dtype((np.void, b[0].nbytes))).ravel()
        _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")             # first appearance first
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return b[first[order]], rank[inverse.ravel()]


def pip_counts(boards: np.ndarray, variant: str | Variant) -> np.ndarray:
    """Pips each side needs to bear off all its checkers: ``(..., 2)`` int32 [mover, opponent].

    A checker on point ``p`` needs ``p`` pips; a checker on the bar needs 25.
    """
    v = get_variant(variant)
    boards = np.asarray(boards)
    pts = boards[..., :24].astype(np.int32)
    own_pips = np.arange(1, 25, dtype=np.int32)
    opp_pips = own_pips[mirror_index(v)]
    mover = (np.maximum(pts, 0) * own_pips).sum(-1) + 25 * boards[..., BAR].astype(np.int32)
    opp = (np.maximum(-pts, 0) * opp_pips).sum(-1) + 25 * boards[..., OPP_BAR].astype(np.int32)
    return np.stack([mover, opp], axis=-1)


def validate(board: np.ndarray, variant: str | Variant) -> None:
    """Raise :class:`InvalidPosition` naming the field or rule if ``board`` is not a position."""
    v = get_variant(variant)
    b = np.asarray(board)
    if b.shape != (BOARD_SIZE,):
        raise InvalidPosition(f"board array must have shape ({BOARD_SIZE},), got {b.shape}")
    pts = b[:24].astype(int)
    for i, c in enumerate(pts):
        if abs(c) > CHECKERS:
            raise InvalidPosition(f"points[{i}] (point {i + 1}) holds {c}: at most 15 checkers (COM)")
    for name, idx in (("bar[0]", BAR), ("bar[1]", OPP_BAR), ("off[0]", OFF), ("off[1]", OPP_OFF)):
        if not 0 <= int(b[idx]) <= CHECKERS:
            raise InvalidPosition(f"{name} = {int(b[idx])} must be between 0 and 15")
    mover = int(pts[pts > 0].sum() + b[BAR] + b[OFF])
    opp = int(-pts[pts < 0].sum() + b[OPP_BAR] + b[OPP_OFF])
    if mover != CHECKERS:
        raise InvalidPosition(f"the mover has {mover} checkers (points + bar[0] + off[0]); each side has 15 (COM)")
    if opp != CHECKERS:
        raise InvalidPosition(f"the opponent has {opp} checkers (points + bar[1] + off[1]); each side has 15 (COM)")
    if v.is_long and (b[BAR] or b[OPP_BAR]):
        raise InvalidPosition("bar must be [0, 0] in long nardy: there is no hitting (LN-2)")
    if b[OFF] == CHECKERS and b[OPP_OFF] == CHECKERS:
        raise InvalidPosition("both sides have borne off all checkers; the game ends at the first (COM-6)")


def validate_dice(dice: Any) -> tuple[int, int]:
    """Check a roll: two integers 1-6.  Returns it as a tuple."""
    if not isinstance(dice, (list, tuple, np.ndarray)) or len(dice) != 2:
        raise InvalidDice(f"dice must be two numbers 1-6, got {dice!r}")
    out = []
    for i, d in enumerate(dice):
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not 1 <= int(d) <= 6:
            raise InvalidDice(f"dice[{i}] = {d!r} must be an integer 1-6")
        out.append(int(d))
    return out[0], out[1]


# --- JSON position format (POSITIONS.md) -------------------------------------------------

#: Who holds the cube, as positions (POSITIONS.md), agents and the XGID name it: centred, the
#: player on roll (the mover), the other player; and each name's access sign (XGID's cube
#: position, Janowski's access: 0, +1, -1).
CUBE_OWNERS = ("centre", "mover", "opponent")
CUBE_ACCESS = {"centre": 0, "mover": 1, "opponent": -1}
#: Highest stake a position may carry (no rule limits redoubles; this keeps stakes exact
#: in int64 and in float arithmetic).
MAX_STAKE = 2 ** 62


def _int_list(obj: dict, key: str, length: int) -> list[int]:
    val = obj.get(key, [0] * length if key in ("bar", "off") else None)
    if val is None:
        raise InvalidPosition(f"missing field {key!r}")
    if not isinstance(val, list) or len(val) != length:
        raise InvalidPosition(f"field {key!r} must be a list of {length} integers")
    for i, x in enumerate(val):
        if isinstance(x, bool) or not isinstance(x, int):
            raise InvalidPosition(f"{key}[{i}] = {x!r} must be an integer")
        if abs(x) > 127:
            raise InvalidPosition(f"{key}[{i}] = {x} is out of range")
    return val


#: Deepest nesting of arrays and objects accepted in JSON text (a position needs 2, a batch
#: request 4): deeper text would exhaust the parser's recursion (a RecursionError).
MAX_JSON_DEPTH = 64
#: Longest line (characters) read from a JSON-lines stream; the rest of a longer one is skipped.
MAX_LINE_CHARS = 2 ** 26
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")
_UNDECODABLE = re.compile("[\ud800-\udfff]")       # bytes that were not UTF-8 (surrogateescape)


def _no_constant(name: str):
    raise FormatError(f"malformed JSON: {name} is not a JSON number")


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise FormatError(f"malformed JSON: the number {text[:40]} is out of range")
    return x


def parse_json(text: str | bytes) -> Any:
    """The value of JSON text, strictly: a :class:`FormatError` (with the column of a syntax
    error) for anything that is not JSON, including ``NaN``/``Infinity``, numbers out of the
    range of a float, integers of more than 4300 digits, nesting deeper than
    :data:`MAX_JSON_DEPTH` and text that was not UTF-8.  Every reader of outside JSON uses it."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise FormatError(f"not UTF-8 text (byte {e.start + 1})") from None
    if not isinstance(text, str):
        raise FormatError(f"JSON text must be a string, got {type(text).__name__}")
    bad = _UNDECODABLE.search(text)
    if bad:
        raise FormatError(f"not UTF-8 text (column {bad.start() + 1})")
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH:
        brackets = _NOT_A_BRACKET.sub("", _JSON_STRING.sub("", text)).encode()
        b = np.frombuffer(brackets, np.uint8)
        steps = np.where((b == ord("[")) | (b == ord("{")), 1, -1)
        if len(steps) and int(np.cumsum(steps).max()) > MAX_JSON_DEPTH:
            raise FormatError(f"malformed JSON: arrays and objects nested more than "
                              f"{MAX_JSON_DEPTH} deep")
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as e:
        raise FormatError(f"malformed JSON: {e.msg} at column {e.colno}") from None
    except ValueError:                      # int() of a number of more than 4300 digits
        raise FormatError("malformed JSON: a number of more than 4300 digits") from None
    except RecursionError:                  # not reached below MAX_JSON_DEPTH; kept as a guard
        raise FormatError("malformed JSON: nested too deep") from None


def json_object(obj, not_an_object: str) -> dict:
    """``obj`` parsed from JSON text if it is a string (:func:`parse_json`); a
    :class:`FormatError` (the column of a syntax error, or ``not_an_object``) unless the result
    is a JSON object."""
    if isinstance(obj, (str, bytes, bytearray)):
        obj = parse_json(obj)
    if not isinstance(obj, dict):
        raise FormatError(not_an_object)
    return obj


def numbered_lines(stream: IO[str], max_chars: int = MAX_LINE_CHARS) -> Iterator[tuple[int, str | None]]:
    """``(line number, line)`` of every line of a text stream, counting from 1; the line is
    None when it is longer than ``max_chars`` (its rest is read and dropped, so memory stays
    bounded whatever the stream holds)."""
    n = 0
    while True:
        line = stream.readline(max_chars + 1)
        if not line:
            return
        n += 1
        if len(line) > max_chars:
            yield n, None                     # first: a reader may stop at it (an endless file)
            while line and not line.endswith("\n"):
                line = stream.readline(max_chars)
        else:
            yield n, line


def board_from_json(obj: dict[str, Any] | str, variant: str | Variant | None = None
                    ) -> tuple[Variant, np.ndarray, tuple[int, int] | None, dict | None]:
    """Read a POSITIONS.md position.  Returns ``(variant, board, dice or None, cube or None)``.

    ``variant`` is the default when the object has no ``"variant"`` key; when both are given
    they must agree.
    """
    obj = json_object(obj, "a position must be a JSON object")
    name = obj.get("variant")
    if name is None:
        if variant is None:
            raise InvalidPosition("missing field 'variant'")
        v = get_variant(variant)
    else:
        if not isinstance(name, str):
            raise InvalidPosition("field 'variant' must be a string")
        v = get_variant(name)
        if variant is not None:
            if get_variant(variant).id != v.id:
                raise InvalidPosition(f"field 'variant' is {v.id!r} but {get_variant(variant).id!r} was asked for")
            v = get_variant(variant)              # with its rule options (stakes, ...)
    points = _int_list(obj, "points", 24)
    bar = _int_list(obj, "bar", 2)
    off = _int_list(obj, "off", 2)
    board = np.array(points + bar + off, dtype=np.int8)
    validate(board, v)
    dice = validate_dice(obj["dice"]) if "dice" in obj else None
    cube = None
    if "cube" in obj:
        cube = obj["cube"]
        if not isinstance(cube, dict):
            raise InvalidPosition("field 'cube' must be an object {value, owner}")
        value, owner = cube.get("value", 1), cube.get("owner", "centre")
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_STAKE:
            raise InvalidPosition(f"cube.value = {value!r} must be a positive integer (at most 2**62)")
        doubling = v.stakes == "cube" or v.stakes == "dave" and v.dave_progression == "geometric"
        if value & (value - 1) and doubling:
            rule = "CUBE-D, geometric" if v.stakes == "dave" else "CUBE-1"
            raise InvalidPosition(f"cube.value = {value} cannot occur in {v.id}: stakes double "
                                  f"({rule}: 1, 2, 4, 8, ...); only arithmetic dave reaches {value}")
        if owner not in CUBE_OWNERS:
            raise InvalidPosition(f"cube.owner = {owner!r} must be one of {', '.join(CUBE_OWNERS)}")
        cube = {"value": value, "owner": owner}
    return v, board, dice, cube


def board_to_json(board: np.ndarray, variant: str | Variant | None = None, **extra: Any) -> dict[str, Any]:
    """A POSITIONS.md position object (``variant`` key only when given)."""
    b = np.asarray(board).astype(int)
    out: dict[str, Any] = {}
    if variant is not None:
        out["variant"] = get_variant(variant).id
    out["points"] = b[:24].tolist()
    out["bar"] = [int(b[BAR]), int(b[OPP_BAR])]
    out["off"] = [int(b[OFF]), int(b[OPP_OFF])]
    out.update(extra)
    return out
