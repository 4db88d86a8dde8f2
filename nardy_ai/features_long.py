"""Expert input features for long nardy: blocks and what they hold back, escapes, mobility,
the head, progress round the board, the race and LN-5 block threats, as pure batched NumPy
functions of ``(M, 28)`` int8 afterstates (:mod:`nardy_ai.board` layout).

The ``long_expert`` encoder (:mod:`nardy_ai.encoding`) is the ``long`` encoder's 212 inputs
followed by the :data:`N_FEATURES` numbers of :func:`long_features`, so a net trained on
``long`` can be warm-started by copying its first-layer weights and zeroing the columns of the
new inputs.

Sides and numbering
-------------------
The board is an afterstate: the *mover* has just moved and the *opponent* rolls next.  Most
features are computed for both sides S (mover, opponent), each in S's own numbering (S moves
from its head, point 24, towards its point 1 and bears off below it; O is the other side).
Both sides travel the same way round (LN-1): O's checker on O's point q stands on S's point
``((q + 11) mod 24) + 1``, so O's head is S's point 12, O's home is S's points 13-18, and O
travels through S's points 12, 11, ..., 1, 24, 23, ..., 13.  Column ``2 i`` is feature ``i`` of
the mover and column ``2 i + 1`` the same feature of the opponent, so that
:func:`nardy_ai.board.flip` swaps each pair (a test checks it).  "S's rolls" are the
opponent's next roll when S is the opponent, and, when S is the mover, the 36 rolls as if the
mover were to roll again.

A *point held* is one with one or more checkers (LN-2: O may not land on it).  A *block* of
S is a run of consecutive points S holds, consecutive *on O's route* (O's points q..q+k-1 in
O's numbering: S's points 1 and 24 are neighbours on it, S's 12 and 13 are not).  O's checkers
*behind* a block stand on higher O points than all of it: they must still pass it.  An O
checker is *ahead* of an S checker when it stands on a lower S point (S must still pass it).

Features of a side S (16 per side, 32 columns, each pair [mover, opponent])
-------------------------------------------------------------------------
``block``
    The length of S's longest block, capped at 6, / 6.  Range [0, 1].
``block_low``
    Where that block stands: S's point number of its last point on O's route (the lowest
    point of the block in S's numbering unless it runs across S's 24/1 seam), / 24; 0 when S
    has no checker on the board.  Of several longest blocks, the one furthest along O's route
    (it holds back the most).  Range [0, 1].
``block_behind``
    O's checkers behind that block, / 15.  Range [0, 1].
``prime``
    Containment by blocks of 3 or more: every O checker counts w(L) for the longest block of
    length L >= 3 ahead of it on its route (w = 1/4, 2/4, 3/4, 1 for L = 3, 4, 5, >= 6), summed
    and / 15.  Range [0, 1].
``six_block``
    1 when S holds six consecutive points of O's route (a full block; the position being legal,
    some O checker is ahead of it or borne off, LN-5), else 0.
``six_threat``
    1 when S holds five consecutive points of O's route with a sixth point adjacent to them
    (at either end) empty, and a six-block there would be legal under LN-5 (some O checker
    stands ahead of the six points, or O has borne off a checker), else 0.
``escapes``
    Escapes of S's rearmost checker (on S's highest point t): the number of the 36 rolls that
    carry it beyond the last (lowest) point holding an O checker among the 12 points in front
    of it (t-1 .. t-12, points below 1 are off the board), moved alone: with one die, both
    dice through an open intermediate point, or up to four steps of a double through open
    points (LN-2: a point holding an O checker is closed), bearing off counting as beyond
    (that is, as if it were S's only checker: COM-5 always lets a lone home checker off);
    36 when none of those 12 points holds an O checker or S has no checker left; / 36.
    Range [0, 1].
``no_play``
    The number of S's 36 rolls on which S can play no checker step at all, / 36.  Exact
    under LN-2, LN-3, LN-4, COM-1/COM-3 and COM-5 (bearing off once every checker is home,
    also in the middle of a roll); LN-5 is not applied (a play that would end in a forbidden
    six-block counts as playable: rare, and it is what keeps this cheap).  Range [0, 1].
``part_play``
    The number of S's 36 rolls on which S can play some but not all of its roll (one die of
    two; fewer than four steps of a double), same rules, / 36; a roll that bears off the last
    checker with dice to spare counts here.  Range [0, 1].
``head_exits``
    While S has a checker on its head (point 24): the number of the 36 rolls with a die d
    whose landing point 24 - d holds no O checker (a checker can leave the head, LN-3), / 36;
    0 with the head empty.  Range [0, 1].
``first_quarter``
    S's checkers on its points 19-24 (its starting quarter, head included), / 15.
``o_home``
    S's checkers on its points 13-18 (O's home), / 15.
``third_quarter``
    S's checkers on its points 7-12, / 15.
``bring_home``
    Pips S needs to bring every checker home (into points 1-6, LN-6): sum of (p - 6) over S's
    checkers on points p > 6, / 270 (the start position's value).  Range [0, 1].
``race_lead``
    S's lead in the race, one sign per side: max(0, O's pips - S's pips) / (S's pips + O's
    pips).  At most one of the pair is non-zero.  Range [0, 1).
``contact_checkers``
    S's checkers that still have an O checker ahead of them on their route (on a lower S
    point), / 15.  Range [0, 1].

Feature of the position (1 column)
----------------------------------
``contact``
    1 while some checker of either side still has an opponent checker ahead of it on its route
    (``contact_checkers`` of the mover or of the opponent is non-zero), else 0 (a race).  The
    same definition as :func:`nardy_ai.classes.long_contact`.

Already in the ``long`` inputs and not repeated: checkers on each head (inputs 192, 193),
borne off (194, 195), pip counts and their difference (196-198), checkers home including
borne off (201, 202: 1 minus the checkers not yet home), may-bear-off flags (203, 204).

Everything is vectorized over positions: both sides are computed in one pass over a stacked
``(2M, 24)`` batch, on 24-bit masks (bit ``i`` = S's point ``i + 1``) and on per-point checker
counts packed eight to a 64-bit word (bit-parallel compares and prefix sums); Python loops run
only over rolls, dice, the steps of a double and block lengths.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from .board import BEAR_OFF_SOURCES, OFF, OPP_OFF, both_sides_points

PER_SIDE = ("block", "block_low", "block_behind", "prime", "six_block", "six_threat",
            "escapes", "no_play", "part_play", "head_exits", "first_quarter", "o_home",
            "third_quarter", "bring_home", "race_lead", "contact_checkers")
#: Column names of :func:`long_features`: ``mover_<f>``, ``opponent_<f>`` per feature, then
#: the feature of the position.
FEATURE_NAMES = tuple(f"{side}_{f}" for f in PER_SIDE for side in ("mover", "opponent")) + (
    "contact",)
N_FEATURES = len(FEATURE_NAMES)
COLUMN = {name: i for i, name in enumerate(FEATURE_NAMES)}

#: The 21 rolls, (high die, low die): the 15 non-doubles (2 of the 36 each), then the doubles.
ROLLS = tuple((a, b) for a in range(2, 7) for b in range(1, a)) + tuple((d, d) for d in range(1, 7))

_U = np.uint32
_U64 = np.uint64
_M24 = _U((1 << 24) - 1)
_HEAD = _U(1 << 23)
_OUTSIDE = _U(((1 << 24) - 1) ^ 0x3F)         # points 7-24: not home
_ONES = _U64(0x0101010101010101)
_HIGH = _U64(0x8080808080808080)
#: Multipliers that gather the high bit of each byte of a word into its top byte, in order
#: (byte k -> bit 56 + k) and reversed (byte k -> bit 63 - k, after a shift right by 7).
_GATHER = _U64(0x0002040810204081)
_GATHER_REV = _U64(0x8040201008040201)


#: ``(7, 64)`` COM-5: the bear-off source bit for die ``d`` when every checker is home and the
#: home points held are the 6-bit mask ``h`` (:data:`nardy_ai.board.BEAR_OFF_SOURCES`).
_BEAR_OFF = BEAR_OFF_SOURCES.reshape(7, 64).astype(_U)


def _high_bit(x: np.ndarray) -> np.ndarray:
    """Index of the highest set bit of 24-bit masks (int32), -127 for an empty one (exact:
    float32 holds every 24-bit integer)."""
    return (x.astype(np.float32).view(np.int32) >> 23) - 127


def _low_bit(x: np.ndarray) -> np.ndarray:
    """Index of the lowest set bit of 24-bit masks, -127 for an empty one."""
    return _high_bit(x & (~x + _U(1)))


def _rot12(x: np.ndarray) -> np.ndarray:
    """A side's point mask in the other side's numbering: index i <-> (i + 12) mod 24 (LN-1)."""
    return ((x >> _U(12)) | (x << _U(12))) & _M24


def _escape_table() -> np.ndarray:
    """``(2**18,)`` uint8 escapes (of 36) of a lone checker: bit ``k - 1`` of the index = the
    point ``k`` pips in front of it (k = 1..18) holds an O checker (see ``escapes``)."""
    g = np.arange(1 << 18, dtype=_U) << _U(1)              # bit k: k pips ahead is closed
    window = g & _U(0x1FFE)
    last = _high_bit(window)                                # -127 when the window is empty
    open_ = [None] + [(g & _U(1 << k)) == 0 for k in range(1, 19)] + [True] * 6
    past = [None] + [last < k for k in range(1, 25)]
    esc = np.zeros(len(g), np.uint8)
    for a, b in ROLLS:
        if a != b:
            ok = ((open_[a] & past[a]) | (open_[b] & past[b])
                  | (open_[a + b] & past[a + b] & (open_[a] | open_[b])))
            esc += ok
            esc += ok
        else:
            alive = open_[a]
            ok = alive & past[a]
            for j in range(2, 5):
                alive = alive & open_[j * a]
                ok |= alive & past[j * a]
            esc += ok
    esc[window == 0] = 36
    return esc


def _head_exit_table() -> np.ndarray:
    """``(64,)`` rolls (of 36) with a die ``d`` whose landing ``d`` pips in front of the head is
    open; bit ``d - 1`` of the index = that point holds an O checker."""
    t = np.zeros(64, np.uint8)
    for c in range(64):
        ok = [None] + [not (c >> (d - 1)) & 1 for d in range(1, 7)]
        t[c] = sum((2 if a != b else 1) * (ok[a] or ok[b]) for a, b in ROLLS)
    return t


_HEAD_EXITS = _head_exit_table()


@cache
def _escapes() -> np.ndarray:
    """The escape table, built on first use (about 30 ms)."""
    return _escape_table()


# --- per-point counts packed eight to a word -------------------------------------------------

def _words(counts: np.ndarray) -> np.ndarray:
    """``(N, 24)`` int8 counts 0..15 -> ``(N, 3)`` uint64, byte ``k`` of word ``w`` = point
    ``8 w + k`` (the byte order of little-endian machines, which NumPy's views follow)."""
    return np.ascontiguousarray(counts).view(_U64)


def _plane(words: np.ndarray, k: int) -> np.ndarray:
    """``(N,)`` uint32 mask of the points holding at least ``k`` checkers (bytewise compare:
    ``c + 128 - k`` has its high bit set iff ``c >= k``, no carries for c <= 15)."""
    g = (((words + _U64((128 - k) * 0x0101010101010101)) & _HIGH) * _GATHER) >> _U64(56)
    g = g.astype(_U)
    return g[:, 0] | (g[:, 1] << _U(8)) | (g[:, 2] << _U(16))


def _plane_reversed(words: np.ndarray) -> np.ndarray:
    """``(N,)`` uint32 mask of the points holding a checker, bit ``23 - i`` = point ``i + 1``."""
    g = (((((words + _U64(127 * 0x0101010101010101)) & _HIGH) >> _U64(7)) * _GATHER_REV)
         >> _U64(56)).astype(_U)
    return (g[:, 0] << _U(16)) | (g[:, 1] << _U(8)) | g[:, 2]


def _prefix(words: np.ndarray) -> np.ndarray:
    """``(N, 24)`` uint8 inclusive prefix sums of the counts: ``[:, k]`` = checkers on points
    1..k+1 (a multiply by 0x0101... sums the bytes below each byte; totals stay below 256)."""
    p = words * _ONES
    p[:, 1] += (p[:, 0] >> _U64(56)) * _ONES
    p[:, 2] += (p[:, 1] >> _U64(56)) * _ONES
    return p.view(np.uint8)


def _pips(words: np.ndarray) -> np.ndarray:
    """``(N,)`` pip counts: the sum of (point number) over the checkers.  The top byte of
    ``word * 0x0102..08`` is sum_k count_k * (k + 1) within a word (every byte sum stays below
    256 with at most 15 checkers, so nothing carries)."""
    top = _U64(56)
    within = (words * _U64(0x0102030405060708)) >> top
    counts = (words * _ONES) >> top
    return (within[:, 0] + within[:, 1] + within[:, 2] + _U64(8) * counts[:, 1]
            + _U64(16) * counts[:, 2]).astype(np.int32)


# --- mobility ----------------------------------------------------------------------------------

def _bear_off_second(d1, d2, own, multi, normal1, bear1):
    """All-home positions: after some first step with die ``d1`` (sources ``normal1 | bear1``),
    can die ``d2`` bear a checker off (COM-5)?  From its exact point d2, or from the highest
    point once no checker stands on d2 or higher.  Broadcasts: ``d1``, ``d2`` may be arrays."""
    first = normal1 | bear1
    e = _U(1) << (d2 - _U(1))
    # A checker on point d2 after the first step: one stayed there, or one moved onto it.
    stays = ((own & e) != 0) & ((first & ~(e & ~multi)) != 0)
    lands = (normal1 & (e << d1)) != 0
    # No checker on d2 or higher after the first step, and one left on the board.
    high = own & ~(e - _U(1))
    lone = ((own & (own - _U(1))) == 0) & (multi == 0)          # a single checker left
    none_high = (high == 0) & (((normal1 != 0) & lone) | ((first != 0) & ~lone))
    one_high = (high != 0) & ((high & (high - _U(1))) == 0) & ((high & multi) == 0)
    moves_under = ((high & normal1) != 0) & (high < (e << d1))
    bears = ((high & bear1) != 0) & (own != high)
    return stays | lands | none_high | (one_high & (moves_under | bears))


_HI = np.array([a for a, b in ROLLS[:15]], _U)
_LO = np.array([b for a, b in ROLLS[:15]], _U)


def _non_doubles(p1, p2, shifted):
    """Rolls (of the 30 non-doubles) on which a side plays no die, and only one.  Exact when
    no step of the roll can bear off (two or more checkers outside home); see
    :func:`_non_doubles_near_home` for the others."""
    multi = p2 & ~_HEAD                           # LN-3: one checker leaves the head
    normal = [None] + [p1 & shifted[d] for d in range(1, 7)]
    moves = [None] + [x != 0 for x in normal[1:]]
    one = np.zeros(len(p1), np.uint8)
    two = np.zeros(len(p1), np.uint8)
    for a, b in ROLLS[:15]:
        na, nb = normal[a], normal[b]
        either = na | nb
        np.add(one, moves[a] | moves[b], out=one)
        # Both dice: one checker through an open point, or two checkers (different points,
        # or one point with two that may move).
        both = (((either & shifted[a + b]) != 0)
                | (moves[a] & moves[b] & ((either & (either - _U(1))) != 0))
                | ((na & nb & multi) != 0))
        np.add(two, both, out=two)
    one = one.astype(np.int32)
    return 2 * (15 - one), 2 * (one - two)


def _non_doubles_near_home(p1, p2, shifted):
    """:func:`_non_doubles` for rows with at most one checker outside home, where a die can
    bear off (COM-5): when every checker is home, and after the lone checker outside comes
    home with the first die.  Vectorized over the 30 ordered (first, second) dice."""
    n = len(p1)
    home = (p1 & _OUTSIDE) == 0
    sh = np.stack([np.zeros(n, _U)] + [shifted[s] for s in range(1, 12)], axis=1)
    normal = p1[:, None] & sh[:, :7]                                      # [:, d]
    bear = _BEAR_OFF[:, p1 & _U(63)].T * home[:, None]                    # [:, d]
    first = normal | bear
    d1 = np.concatenate([_HI, _LO])                                       # both orders
    d2 = np.concatenate([_LO, _HI])
    n1, n2, f1 = normal[:, d1], normal[:, d2], first[:, d1]
    # The second die after a first step: a different checker, or the same one on.
    u = f1 | n2
    two = (((n1 & sh[:, d1 + d2]) != 0) | ((f1 != 0) & (n2 != 0) & ((u & (u - _U(1))) != 0))
           | ((f1 & n2 & (p2 & ~_HEAD)[:, None]) != 0))
    h = np.flatnonzero(home)
    two[h] |= _bear_off_second(d1, d2, p1[h, None], p2[h, None], n1[h], bear[h][:, d1])
    # The lone checker outside comes home with the first die, then the second bears off.
    o = np.flatnonzero(~home)
    outside = (p1[o] & _OUTSIDE)[:, None]
    comes = (outside & n1[o] & ((_U(1) << (d1 + _U(6))) - _U(1))) != 0
    after = ((p1[o, None] & _U(63)) | (outside >> d1)) & _U(63)
    two[o] |= comes & (_BEAR_OFF.ravel().take(d2 * _U(64) + after) != 0)
    one = ((first[:, _HI] | first[:, _LO]) != 0).sum(axis=1, dtype=np.int32)
    two = (two[:, :15] | two[:, 15:]).sum(axis=1, dtype=np.int32)
    return 2 * (15 - one), 2 * (one - two)


def _double_steps(d, q1, q2, q3, q4, sh, head_left):
    """Most steps (0-4) of the double ``d``.  ``q1..q4``: masks of the points holding >= 1..4
    of the side's checkers, ``sh``: points whose point d pips ahead is open, ``head_left``:
    checkers that may still leave the head (LN-3/LN-4).  Steps never block one another (own
    checkers never close a point; bearing off only gets easier as checkers come home or
    leave), so playing any legal step while one exists reaches the most steps: each step
    plays the lowest legal source.  The inputs are modified."""
    steps = np.zeros(len(q1), np.int32)
    for step in range(4):
        legal = (q1 & sh) | (_BEAR_OFF[d][q1 & _U(63)] * ((q1 & _OUTSIDE) == 0))
        if step:
            legal &= ~(_HEAD * (head_left == 0))
        if step == 3:
            return steps + (legal != 0)
        src = legal & (~legal + _U(1))               # the lowest legal source
        steps += src != 0
        head_left -= src >> _U(23)
        off = ~src                                    # one checker fewer on src ...
        q1 &= q2 | off
        q2 &= q3 | off
        q3 &= q4 | off
        q4 &= off
        tgt = src >> _U(d)                            # ... and one more on src - d (0: borne off)
        q4 |= q3 & tgt
        q3 |= q2 & tgt
        q2 |= q1 & tgt
        q1 |= tgt


def _mobility(p1, p2, p3, p4, open_, head15, outside):
    """Rolls (of 36) on which a side plays nothing, and only part of its roll (``no_play``,
    ``part_play``).  ``p1..p4``: masks of the points holding >= 1..4 of its checkers (its
    numbering), ``open_``: points holding no O checker, ``head15``: all 15 on the head,
    ``outside``: its checkers outside home."""
    shifted = {s: (open_ << _U(s)) & _M24 for s in range(1, 13)}  # bit i: i - s is open
    none, part = _non_doubles(p1, p2, shifted)
    near = np.flatnonzero(outside <= 1)       # every checker home, or one outside
    if len(near):
        none[near], part[near] = _non_doubles_near_home(p1[near], p2[near],
                                                        {s: x[near] for s, x in shifted.items()})
    multi = p2 & ~_HEAD
    cap = 1 + head15.astype(_U)                    # LN-4: two head checkers on a first double
    for d in range(1, 7):
        # Four steps for sure: distinct movable points, second checkers there, second steps.
        first = p1 & shifted[d]
        sure = (np.bitwise_count(first) + np.bitwise_count(first & multi)
                + np.bitwise_count(first & shifted[2 * d])) >= 4
        rows = np.flatnonzero(~sure)
        steps = _double_steps(d, p1[rows], p2[rows], p3[rows], p4[rows], shifted[d][rows],
                              cap[rows])
        none[rows] += steps == 0
        part[rows] += (steps > 0) & (steps < 4)
    return none, part


# --- the features --------------------------------------------------------------------------------

def long_features(boards: np.ndarray) -> np.ndarray:
    """The :data:`N_FEATURES` expert features of long-nardy afterstates (module docstring):
    ``(M, 28)`` int8 boards -> ``(M, N_FEATURES)`` float32."""
    boards = np.asarray(boards)
    m = len(boards)
    n = 2 * m
    # Each side's checkers in its own numbering: rows [0, m) the mover, [m, 2m) the opponent.
    own = np.maximum(both_sides_points(boards, "long"), 0)

    def other(x):
        """The other side's value of each row."""
        return np.concatenate([x[m:], x[:m]])

    w = _words(own)
    p1, p2, p3, p4 = (_plane(w, k) for k in (1, 2, 3, 4))
    pre = _prefix(w)                                # [:, k]: checkers on points 1..k+1
    flat = pre.reshape(-1)
    total = pre[:, 23].astype(np.int32)             # checkers on the board
    rows24 = np.arange(0, 24 * n, 24)

    def from_point(k, o=False):
        """Checkers of S (of O with ``o``: O's numbering) on points k+1..24, k = 0..24."""
        base, tot = (other(rows24), other(total)) if o else (rows24, total)
        return tot - flat[base + np.maximum(k - 1, 0)] * (k > 0)

    p1_o = other(p1)                                # O's checkers, O's numbering
    oth = _rot12(p1_o)                              # O's checkers, S's numbering
    oth_rev = _rot12(other(_plane_reversed(w)))     # the same, bit 23 - i = point i + 1
    per = np.empty((len(PER_SIDE), n), np.float32)
    col = {name: i for i, name in enumerate(PER_SIDE)}

    # Blocks, in O's numbering (O's route runs from bit 23 down to bit 0).
    held = _rot12(p1)
    runs = [held]                                   # runs[k-1]: bit a = held a..a+k-1
    while True:
        nxt = runs[-1] & (held >> _U(len(runs)))
        if len(runs) >= 6 and not nxt.any():
            break
        runs.append(nxt)
    length = np.zeros(n, np.int32)
    longest = held.copy()                           # runs[length - 1]
    for r in runs[1:]:
        there = r != 0
        length += there
        keep = there * _U(0xFFFFFFFF)
        longest = (r & keep) | (longest & ~keep)
    length += held != 0
    start = np.maximum(_low_bit(longest), 0)
    per[col["block"]] = np.minimum(length, 6) * np.float32(1 / 6)
    per[col["block_low"]] = ((start + 12) % 24 + 1) * (length > 0) * np.float32(1 / 24)
    behind = from_point(start + length, o=True) * (length > 0)
    per[col["block_behind"]] = behind * np.float32(1 / 15)
    prime = np.zeros(n, np.int32)
    for k in range(3, 7):
        r = runs[k - 1]
        prime += from_point(np.maximum(_low_bit(r), 0) + k, o=True) * (r != 0)
    per[col["prime"]] = prime * np.float32(1 / 60)
    per[col["six_block"]] = runs[5] != 0
    empty = ~held & ~p1_o & _M24
    five = runs[4]
    windows = (five & (empty >> _U(5))) | ((five >> _U(1)) & empty)
    # LN-5: a block is legal with an O checker below its lowest point, or one borne off.
    o_front = np.maximum(_low_bit(p1_o), 0).astype(_U)
    o_off = np.concatenate([boards[:, OPP_OFF], boards[:, OFF]]) > 0
    legal = ~((_U(2) << o_front) - _U(1)) | (o_off * _M24)
    per[col["six_threat"]] = (windows & legal & _M24) != 0

    # Escapes of the rearmost checker and exits from the head.
    back = np.maximum(_high_bit(p1), 0).astype(_U)
    ahead = oth_rev >> (_U(23) - back)              # bit k: the point k pips ahead is closed
    esc = _escapes().take((ahead >> _U(1)) & _U((1 << 18) - 1))
    per[col["escapes"]] = np.where(p1 != 0, esc, 36) * np.float32(1 / 36)
    per[col["head_exits"]] = (_HEAD_EXITS.take((oth_rev >> _U(1)) & _U(63)) * (p1 >> _U(23))
                              * np.float32(1 / 36))

    outside = total - pre[:, 5]
    none, part = _mobility(p1, p2, p3, p4, ~oth & _M24, own[:, 23] == 15, outside)
    per[col["no_play"]] = none * np.float32(1 / 36)
    per[col["part_play"]] = part * np.float32(1 / 36)

    # Progress round the board.
    q6, q12, q18 = (pre[:, k].astype(np.int32) for k in (5, 11, 17))   # on points 1..k+1
    per[col["first_quarter"]] = (total - q18) * np.float32(1 / 15)
    per[col["o_home"]] = (q18 - q12) * np.float32(1 / 15)
    per[col["third_quarter"]] = (q12 - q6) * np.float32(1 / 15)
    pips = _pips(w)
    home_pips = ((w[:, 0] & _U64(0xFFFFFFFFFFFF)) * _U64(0x0102030405060708)) >> _U64(56)
    per[col["bring_home"]] = (pips - home_pips.astype(np.int32) - 6 * outside) * np.float32(1 / 270)
    o_pips = other(pips)
    per[col["race_lead"]] = np.maximum(o_pips - pips, 0) / np.maximum(pips + o_pips, 1)
    # S's checkers above O's checker furthest along S's route have it ahead of them.
    ahead_of = np.where(oth != 0, _low_bit(oth) + 1, 24)
    contact = from_point(ahead_of)
    per[col["contact_checkers"]] = contact * np.float32(1 / 15)

    out = np.empty((m, N_FEATURES), np.float32)
    out[:, :-1] = per.reshape(len(PER_SIDE), 2, m).transpose(2, 0, 1).reshape(m, 2 * len(PER_SIDE))
    out[:, -1] = (contact[:m] + contact[m:]) > 0
    return out
