"""Interop formats of the backgammon family: the GNU Backgammon Position ID and the
eXtreme Gammon XGID (POSITIONS.md, "Backgammon interop").

Both read and write the mover-relative ``(28,)`` int8 layout of :mod:`nardy_ai.board`. They
exist only for short-nardy variants (family ``"short"``): long nardy has no bar, its players
travel the same way round, and neither program can represent it.

GNU Backgammon Position ID
    An 80-bit key, written as 14 base64 characters. For each side in turn, for its points 1 to
    24 (in that side's own numbering) and then its bar: one ``1`` bit per checker, then a ``0``.
    The key is padded with ``0`` bits; bit ``k`` of the string is bit ``k % 8`` (least
    significant first) of byte ``k // 8``. Borne-off checkers are not stored: off = 15 minus
    the checkers on the points and the bar.

    **Which side comes first.** The gnubg manual's prose says "the player on roll", but gnubg
    itself (``PositionKey`` in ``positionid.c`` encodes ``anBoard[0]`` then ``anBoard[1]``, and
    ``anBoard[1]`` is the player on roll) writes the player *not* on roll first. Real gnubg
    output agrees: in a text export the ID shown for "Lasse to play 41" after "Magic moves
    24/21 13/11" is ``4HPkASLgc/ABMA``, whose first half is Magic's moved position and whose
    second half is Lasse's untouched start. This module follows gnubg's behaviour: opponent
    first, mover second. The start position is symmetric, ``4HPwATDgc/ABMA`` either way.

XGID
    ``XGID=<26 chars>:<cube exp>:<cube pos>:<turn>:<dice>:<score bottom>:<score top>:
    <crawford/jacoby>:<match length>:<max cube exp>``. The 26 characters are: index 0 the top
    (lowercase) player's bar, indices 1..24 points 1..24 numbered from the bottom (uppercase)
    player's side, index 25 the bottom player's bar; ``-`` empty, ``A``.. the bottom player's
    checkers (A = 1), ``a``.. the top player's. The position is always seen from the bottom
    player; ``turn`` is 1 when the bottom player is on turn and -1 when the top player is.
    Cube position 1 = owned by the bottom player, -1 = by the top player, 0 = centred; the cube
    value is ``2 ** exp``. Dice ``00`` = not yet rolled; ``D`` = a double is offered (``B``
    beavered, ``R`` raccooned); otherwise the two dice. The rules field is 1 for the Crawford
    game in a match; in a money game (match length 0) bit 1 is the Jacoby rule and bit 2
    beavers. When reading, whoever is on turn becomes the mover; when writing, the mover is the
    bottom (uppercase) player with turn 1.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .board import (BAR, BOARD_SIZE, CHECKERS, CUBE_ACCESS, CUBE_OWNERS, OFF, OPP_BAR, OPP_OFF, validate,
                    validate_dice)
from .errors import FormatError, InvalidDice, InvalidPosition
from .variants import Variant, get_variant

__all__ = ["position_id", "board_from_position_id", "xgid", "board_from_xgid"]

_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_VALUE = {c: i for i, c in enumerate(_B64)}
_KEY_BITS = 80
_ID_LENGTH = 14


def _short_variant(variant: str | Variant, what: str) -> Variant:
    v = get_variant(variant)
    if v.family != "short":
        raise FormatError(
            f"{what} is for backgammon-family variants only (family 'short'); "
            f"{v.id!r} is {v.family} nardy")
    return v


def _id_text(text: Any, variant: str | Variant, what: str, a_name: str) -> tuple[Variant, str]:
    """The variant and the stripped ``text`` of an ID to read: ``what`` (the ID, in the variant's
    refusal) is for backgammon-family variants only and ``a_name`` (``"an XGID"``) is a string."""
    v = _short_variant(variant, what)
    if not isinstance(text, str):
        raise FormatError(f"{a_name} must be a string, got {type(text).__name__}")
    return v, text.strip()


def _checked_board(board: Any, v: Variant) -> np.ndarray:
    b = np.asarray(board)
    validate(b, v)
    return b.astype(np.int8)


def _sides(b: np.ndarray) -> tuple[list[int], list[int]]:
    """(mover, opponent) as 25 counts each: points 1..24 in that side's numbering, then bar."""
    pts = b[:24].astype(int)
    mover = [max(int(c), 0) for c in pts] + [int(b[BAR])]
    # The opponent's point q is the mover's point 25 - q (BG-1): index 24 - q.
    opp = [max(-int(pts[24 - q]), 0) for q in range(1, 25)] + [int(b[OPP_BAR])]
    return mover, opp


def _board_from_sides(mover: list[int], opp: list[int], v: Variant, source: str) -> np.ndarray:
    b = np.zeros(BOARD_SIZE, dtype=np.int8)
    for i in range(24):
        m, o = mover[i], opp[23 - i]
        if m and o:
            raise FormatError(
                f"{source}: both sides have checkers on point {i + 1} (mover's numbering)")
        b[i] = m - o
    b[BAR], b[OPP_BAR] = mover[24], opp[24]
    for name, side, off_idx in (("mover", mover, OFF), ("opponent", opp, OPP_OFF)):
        n = sum(side)
        if n > CHECKERS:
            raise FormatError(f"{source}: the {name} has {n} checkers on the board and bar; at most 15")
        b[off_idx] = CHECKERS - n
    try:
        validate(b, v)
    except InvalidPosition as e:
        raise FormatError(f"{source}: {e}") from None
    return b


# --- GNU Backgammon Position ID ----------------------------------------------------------

def position_id(board: np.ndarray, variant: str | Variant = "backgammon") -> str:
    """The gnubg Position ID (14 characters) of a mover-relative position.

    The player on roll in gnubg is our mover. Raises :class:`FormatError` for a long-nardy
    variant and :class:`InvalidPosition` for a board that is not a position.
    """
    v = _short_variant(variant, "the GNU Backgammon Position ID")
    mover, opp = _sides(_checked_board(board, v))
    key = 0
    bit = 0
    for side in (opp, mover):           # gnubg writes the player not on roll first
        for count in side:
            key |= ((1 << count) - 1) << bit
            bit += count + 1
    data = key.to_bytes(10, "little")
    chars = []
    for i in range(0, 9, 3):
        n = int.from_bytes(data[i:i + 3], "big")
        chars += [_B64[(n >> s) & 63] for s in (18, 12, 6, 0)]
    chars += [_B64[data[9] >> 2], _B64[(data[9] & 3) << 4]]
    return "".join(chars)


def board_from_position_id(pid: str, variant: str | Variant = "backgammon") -> np.ndarray:
    """Read a gnubg Position ID into a ``(28,)`` int8 board seen by the player on roll.

    Off counts are derived (15 minus checkers on the points and the bar). Raises
    :class:`FormatError` naming the problem for a malformed ID.
    """
    v, s = _id_text(pid, variant, "the GNU Backgammon Position ID", "a Position ID")
    if ":" in s and len(s.split(":")[0].strip()) == _ID_LENGTH:
        raise FormatError(f"{pid[:80]!r} is a GNU Backgammon ID with a Match ID after ':'; give the "
                          f"{_ID_LENGTH}-character Position ID alone (the cube, dice and score of a "
                          f"Match ID are not read)")
    if len(s) != _ID_LENGTH:
        raise FormatError(f"Position ID {pid!r} has {len(s)} characters; it must have {_ID_LENGTH}")
    for i, c in enumerate(s):
        if c not in _B64_VALUE:
            raise FormatError(f"Position ID {pid!r}: character {i + 1} {c!r} is not base64 (A-Z a-z 0-9 + /)")
    values = [_B64_VALUE[c] for c in s]
    if values[-1] & 0x0F:
        raise FormatError(f"Position ID {pid!r}: the last character has bits beyond the 80-bit key set")
    key = 0
    for val in values:
        key = (key << 6) | val
    key >>= 4                                               # 84 bits of characters, 80 of key
    data = key.to_bytes(10, "big")
    key = int.from_bytes(data, "little")                    # bit k of the string is bit k here

    sides: list[list[int]] = [[], []]
    bit = 0
    for side in sides:
        for _ in range(25):
            count = 0
            while bit < _KEY_BITS and key >> bit & 1:
                count += 1
                bit += 1
            if bit >= _KEY_BITS:
                raise FormatError(f"Position ID {pid!r}: the key ends before both sides are complete "
                                  "(more than 30 checkers)")
            side.append(count)
            bit += 1
    if key >> bit:
        raise FormatError(f"Position ID {pid!r}: bits are set after both sides are complete")
    opp, mover = sides
    return _board_from_sides(mover, opp, v, f"Position ID {pid!r}")


# --- eXtreme Gammon XGID -----------------------------------------------------------------

def _xg_char(count: int, upper: bool) -> str:
    if count == 0:
        return "-"
    return chr((ord("A") if upper else ord("a")) + count - 1)


def xgid(board: np.ndarray, dice: tuple[int, int] | None = None, cube_value: int = 1,
         cube_owner: str = "centre", *, score: tuple[int, int] = (0, 0), match_length: int = 0,
         crawford: bool = False, jacoby: bool = False, beaver: bool = False,
         cube_action: str | None = None, max_cube: int = 1024,
         variant: str | Variant = "backgammon") -> str:
    """The XGID of a mover-relative position, with the mover as the bottom player on turn.

    ``score`` is ``(mover, opponent)``; ``match_length`` 0 is a money game, where ``jacoby``
    and ``beaver`` are the rule flags (``crawford`` is for matches). ``cube_action`` ``"double"``
    / ``"beaver"`` / ``"raccoon"`` writes ``D`` / ``B`` / ``R`` instead of dice (a cube decision
    pending); ``max_cube`` is a power of two.
    """
    v = _short_variant(variant, "the XGID")
    mover, opp = _sides(_checked_board(board, v))
    chars = ["-"] * 26
    chars[0] = _xg_char(opp[24], upper=False)
    chars[25] = _xg_char(mover[24], upper=True)
    for i in range(24):
        if mover[i]:
            chars[i + 1] = _xg_char(mover[i], upper=True)
        elif opp[23 - i]:
            chars[i + 1] = _xg_char(opp[23 - i], upper=False)

    cube_exp = _log2(cube_value, "cube_value")
    if cube_owner not in CUBE_OWNERS:
        raise FormatError(f"cube_owner = {cube_owner!r} must be one of {', '.join(CUBE_OWNERS)}")
    cube_pos = CUBE_ACCESS[cube_owner]
    actions = {None: None, "double": "D", "beaver": "B", "raccoon": "R"}
    if cube_action not in actions:
        raise FormatError(f"cube_action = {cube_action!r} must be None, 'double', 'beaver' or 'raccoon'")
    if cube_action is not None:
        if dice is not None:
            raise FormatError("an XGID holds either dice or a pending cube action, not both")
        dice_field = actions[cube_action]
    elif dice is None:
        dice_field = "00"
    else:
        try:
            d1, d2 = validate_dice(dice)
        except InvalidDice as e:
            raise FormatError(str(e)) from None
        dice_field = f"{d1}{d2}"
    if len(score) != 2 or any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0
                              for s in score):
        raise FormatError(f"score = {score!r} must be two non-negative integers (mover, opponent)")
    if isinstance(match_length, bool) or not isinstance(match_length, (int, np.integer)) or match_length < 0:
        raise FormatError(f"match_length = {match_length!r} must be a non-negative integer (0 = money)")
    if match_length:
        if jacoby or beaver:
            raise FormatError("jacoby and beaver are money-game rules; match_length must be 0")
        if max(score) >= match_length:
            raise FormatError(f"score = {tuple(int(x) for x in score)} must be below match_length = {match_length}")
        if crawford and match_length - 1 not in score:
            raise FormatError(f"crawford: the Crawford game needs a player at {match_length - 1} of "
                              f"{match_length}; score = {tuple(int(x) for x in score)}")
        rules = int(crawford)
    else:
        if crawford:
            raise FormatError("crawford applies to matches; match_length is 0 (money)")
        rules = int(jacoby) | 2 * int(beaver)
    max_exp = _log2(max_cube, "max_cube")
    return (f"XGID={''.join(chars)}:{cube_exp}:{cube_pos}:1:{dice_field}:"
            f"{int(score[0])}:{int(score[1])}:{rules}:{int(match_length)}:{max_exp}")


def _log2(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1 \
            or value & (value - 1):
        raise FormatError(f"{name} = {value!r} must be a power of two (1, 2, 4, ...)")
    return int(value).bit_length() - 1


_INT = re.compile(r"-?[0-9]{1,18}")


def _int_field(text: str, name: str, s: str) -> int:
    if not _INT.fullmatch(text):
        raise FormatError(f"XGID {s[:80]!r}: field {name} = {text[:40]!r} is not an integer (at most 18 digits)")
    return int(text)


def board_from_xgid(s: str, variant: str | Variant = "backgammon") -> tuple[np.ndarray, dict[str, Any]]:
    """Read an XGID.  Returns ``(board, info)``: the board seen by the player on turn.

    ``info`` has the keys ``dice`` (tuple or None), ``cube`` (``{"value", "owner"}`` with owner
    centre / mover / opponent), ``cube_action`` (None, ``"double"``, ``"beaver"``,
    ``"raccoon"``), ``turn`` (``"bottom"`` or ``"top"``: which XG player is our mover),
    ``score`` (``(mover, opponent)``), ``match_length`` (0 = money), ``crawford``, ``jacoby``,
    ``beaver`` and ``max_cube``.  An XGID has its 10 fields (position, cube value, cube
    position, turn, dice, score bottom, score top, crawford/jacoby, match length, max cube), or
    only the first 4 (a money position before the roll: the others take XG's defaults); any
    other count is refused, as a cut-off XGID would read its missing fields (a match length, a
    score) as defaults.
    """
    v, text = _id_text(s, variant, "the XGID", "an XGID")
    if text.upper().startswith("XGID="):
        text = text[5:]
    fields = text.split(":")
    if len(fields) not in (4, 10):
        raise FormatError(f"XGID {s[:80]!r} has {len(fields)} fields separated by ':'; an XGID has 10 "
                          f"(position, cube, cube position, turn, dice, score bottom, score top, "
                          f"crawford/jacoby, match length, max cube) or, for a money position before "
                          f"the roll, the first 4" + (": is it cut off?" if 4 < len(fields) < 10 else ""))
    s = s[:80]                           # for the messages below (the fields above are checked whole)
    pos = fields[0]
    if len(pos) != 26:
        raise FormatError(f"XGID {s!r}: the position has {len(pos)} characters; it must have 26")
    bottom = [0] * 25     # points 1..24 in the bottom player's numbering, then bar
    top = [0] * 25        # points 1..24 in the top player's numbering, then bar
    for i, c in enumerate(pos):
        if c == "-":
            continue
        if "A" <= c <= "P":
            upper, n = True, ord(c) - ord("A") + 1
        elif "a" <= c <= "p":
            upper, n = False, ord(c) - ord("a") + 1
        else:
            raise FormatError(f"XGID {s!r}: position character {i + 1} {c!r} must be '-', A-P or a-p")
        if i == 0 and upper or i == 25 and not upper:
            who = "top (lowercase)" if i == 0 else "bottom (uppercase)"
            raise FormatError(f"XGID {s!r}: position character {i + 1} is the {who} player's bar; "
                              f"{c!r} belongs to the other player")
        if i in (0, 25):
            (top if i == 0 else bottom)[24] = n
        elif upper:
            bottom[i - 1] = n
        else:
            top[24 - i] = n

    cube_exp = _int_field(fields[1], "cube value", s)
    cube_pos = _int_field(fields[2], "cube position", s)
    turn = _int_field(fields[3], "turn", s)
    if not 0 <= cube_exp <= 15:
        raise FormatError(f"XGID {s!r}: cube value exponent {cube_exp} must be 0-15 (cube 1-32768)")
    if cube_pos not in (-1, 0, 1):
        raise FormatError(f"XGID {s!r}: cube position {cube_pos} must be -1, 0 or 1")
    if turn not in (-1, 1):
        raise FormatError(f"XGID {s!r}: turn {turn} must be 1 (bottom player) or -1 (top player)")

    dice_field = fields[4] if len(fields) > 4 else "00"
    dice = None
    cube_action = None
    if dice_field in ("D", "B", "R"):
        cube_action = {"D": "double", "B": "beaver", "R": "raccoon"}[dice_field]
    elif dice_field != "00":
        if not re.fullmatch(r"[1-6][1-6]", dice_field):
            raise FormatError(f"XGID {s!r}: dice {dice_field!r} must be 00, D, B, R or two digits 1-6")
        dice = (int(dice_field[0]), int(dice_field[1]))
    rest = [_int_field(f, name, s) for f, name in zip(
        fields[5:], ("score bottom", "score top", "crawford/jacoby", "match length", "max cube"))]
    score_bottom, score_top, rules, match_length, max_exp = rest + [0, 0, 0, 0, 10][len(rest):]
    if score_bottom < 0 or score_top < 0:
        raise FormatError(f"XGID {s!r}: scores must be non-negative")
    if match_length < 0:
        raise FormatError(f"XGID {s!r}: match length {match_length} must be >= 0 (0 = money)")
    if match_length and rules not in (0, 1) or not match_length and not 0 <= rules <= 3:
        raise FormatError(f"XGID {s!r}: crawford/jacoby field {rules} is out of range")
    if not 0 <= max_exp <= 15:
        raise FormatError(f"XGID {s!r}: max cube exponent {max_exp} must be 0-15")
    if cube_exp > max_exp:
        raise FormatError(f"XGID {s!r}: cube value exponent {cube_exp} is above the max cube exponent {max_exp}")
    if match_length and max(score_bottom, score_top) >= match_length:
        raise FormatError(f"XGID {s!r}: scores {score_bottom} and {score_top} must be below the "
                          f"match length {match_length}")
    if match_length and rules == 1 and match_length - 1 not in (score_bottom, score_top):
        raise FormatError(f"XGID {s!r}: crawford/jacoby field 1 marks the Crawford game, which needs a "
                          f"player at {match_length - 1} of {match_length}; the scores are "
                          f"{score_bottom} and {score_top}")

    mover, opp = (bottom, top) if turn == 1 else (top, bottom)
    board = _board_from_sides(mover, opp, v, f"XGID {s!r}")
    owner = "centre" if cube_pos == 0 else ("mover" if cube_pos == turn else "opponent")
    scores = (score_bottom, score_top) if turn == 1 else (score_top, score_bottom)
    info = {
        "dice": dice,
        "cube": {"value": 1 << cube_exp, "owner": owner},
        "cube_action": cube_action,
        "turn": "bottom" if turn == 1 else "top",
        "score": scores,
        "match_length": match_length,
        "crawford": bool(match_length and rules == 1),
        "jacoby": bool(not match_length and rules & 1),
        "beaver": bool(not match_length and rules & 2),
        "max_cube": 1 << max_exp,
    }
    return board, info
