"""Expert input features for the backgammon family (short nardy): the hand-made features of
strong backgammon nets (hit chances, escapes, containment, timing, ...), as pure batched NumPy
functions of ``(M, 28)`` int8 afterstates (:mod:`nardy_ai.board` layout).

The ``expert`` encoder (:mod:`nardy_ai.encoding`) is TD-Gammon's 198 inputs followed by the
:data:`N_FEATURES` numbers of :func:`expert_features`, so a net trained on ``tdgammon`` can be
warm-started by copying its first-layer weights and zeroing the columns of the new inputs.

Sides and numbering
-------------------
The board is an afterstate: the *mover* has just moved and the *opponent* rolls next.  Most
features are computed for both sides S (mover, opponent), each in S's own numbering (S moves
from its point 24 towards its point 1, its bar is point 25; O is the other side).  Column
``2 i`` is feature ``i`` of the mover and column ``2 i + 1`` the same feature of the opponent,
so that :func:`nardy_ai.board.flip` swaps each pair (a test checks it).  "S's rolls" are the
opponent's next roll when S is the opponent, and, when S is the mover, the 36 rolls as if the
mover were to roll again (its own shots at the opponent's blots).

A *point held* is one with two or more checkers; O's held points *block* S.  *Escapes from
point p* is the number of the 36 rolls on which one S checker on p can move past the last
(lowest-numbered) point O holds among the 12 points in front of it (p-1 .. p-12), using one
die, both dice through an open intermediate point (BG-5), or up to four steps of a double
through open points; 36 when O holds none of those 12 points.  Points below 1 count as open,
and so do O's points in S's home board (1-6): they are O's anchors, not a blockade.

Features of a side S (19 per side, 38 columns, each pair [mover, opponent])
-------------------------------------------------------------------------
``hit1``, ``hit2``
    The number of S's 36 rolls on which some play hits at least one (``hit1``), and at least
    two (``hit2``), of O's blots, / 36.  Counted exactly under BG-2..BG-5: S's bar checkers
    enter first (BG-4: one on the bar enters with either die and the other die is free; two
    or more use both dice to enter; a double enters up to four and plays the rest), hits on
    entering count, combination shots need an open intermediate point (BG-5), a double's
    steps go through open points, and one checker may hit twice.  Not modelled: COM-1/COM-2
    forbidding a hitting play because another play uses more of the roll, and BG-HH (the
    counts are over every partial play).  On positions from random play they agree with the
    legal plays of :func:`nardy_ai.movegen.generate` on over 99% of positions; elsewhere they
    are higher (the tests check both).  Range [0, 1].
``pip_loss``
    The pips O loses to S's hits, averaged over the 36 rolls: for each roll, the largest loss
    of one hit (a blot on S's point t sends O's checker from O's point 25 - t to the bar: t
    pips), 0 when the roll hits nothing; / 24.  Range [0, 1].
``back_escapes``
    Escapes of S's rearmost checker (the bar counts as point 25), / 36; 1 when all of S's
    checkers are in its home board (points 1-6) or borne off.  Range [0, 1].
``contain``
    How well S's points contain O: 1 - (fewest escapes of an O checker from any of O's points
    15-24, through S's points) / 36.  Range [0, 1].
``acontain``
    The same, over O's points from 15 up to O's rearmost checker only (O's bar = 25): 0 when
    O's rearmost checker is below its 15-point.  Range [0, 1].
``mobility``
    Sum over S's checkers outside its home board (points 7-24 and the bar) of their escapes,
    / (15 * 36).  Range [0, 1].
``timing``
    Pips S can play without breaking the points it holds in its home board (1-6) or in O's
    home board (its points 19-24): every checker counts p - 1 pips (bar: 24), less 2 (p - 1)
    for each of those held points; / 167.  Range [0, 360/167].
``free_pips``
    Pips of S's checkers already past all of O's checkers (on points below O's rearmost
    checker, S's numbering; O's bar is S's point 0), / 167.  Range [0, 360/167].
``break_contact``
    Pips S must play before all its checkers are past all of O's: each S checker on a point
    p above O's rearmost checker r must reach r - 1 (or bear off when r <= 1): p - r + 1 pips,
    or p when O has a checker on the bar; / 167.  Range [0, 375/167].
``pips``
    S's pip count (bar = 25), / 167 (the start position's count).  Range [0, 375/167].
``prime``
    The longest run of consecutive points S holds, capped at 6, / 6.  Range [0, 1].
``backbone``
    The most points S holds among any 6 consecutive points (a prime with gaps), / 6.
    Range [0, 1].
``anchors``
    Points S holds in O's home board (S's points 19-24), / 6.  Range [0, 1].
``forward_anchor``
    S's most advanced anchor: (25 - p) / 6 for the lowest point p in 19-24 that S holds
    (O's 6-point: 1), 0 when S holds none.  Range [0, 1].
``backgame``
    Back game: when S holds two or more points in O's home board, S's checkers there and on
    the bar / 15; else 0.  Range [0, 1].
``closed``
    Points S holds in its home board (closed to O's checkers entering from the bar), / 6.
    Range [0, 1].
``dance1``
    Rolls on which one S checker on the bar fails to enter (dances) against O's home board:
    c^2 / 36 for c points O holds in its home board.  Range [0, 1].
``dance2``
    Rolls on which two S checkers on the bar do not both enter: 1 - (6 - c)^2 / 36.
    Range [0, 1].

Features of the position (2 columns)
------------------------------------
``pip_lead``
    The mover's race lead (opponent's pips - mover's pips) / 100, clipped to [-1, 1]; the
    opponent is on roll.  :func:`nardy_ai.board.flip` negates it.
``contact``
    1 while some checker still has an opponent checker ahead of it (on the bar counts), else 0.

Checkers borne off are TD-Gammon's inputs 194 and 195, not repeated here.  :data:`RANGES`
holds each column's range as data.

Everything is vectorized over positions: Python loops run over the 21 rolls, the 6 dice, the
points and the steps of a double, each on bitmasks of all positions at once (bit ``i`` =
point ``i + 1``, bit 24 = the bar), both sides in one pass over a stacked batch; escapes come
from a 4096-entry table indexed by the 12 points in front of a checker.  The features rules
are BG-1..BG-5 (backgammon's); they serve every short-nardy variant.
"""

from __future__ import annotations

import numpy as np

from .board import BAR, OPP_BAR, both_sides_points

PER_SIDE = ("hit1", "hit2", "pip_loss", "back_escapes", "contain", "acontain", "mobility",
            "timing", "free_pips", "break_contact", "pips", "prime", "backbone", "anchors",
            "forward_anchor", "backgame", "closed", "dance1", "dance2")
#: Column names of :func:`expert_features`: ``mover_<f>``, ``opponent_<f>`` per feature, then
#: the two features of the position.
FEATURE_NAMES = tuple(f"{side}_{f}" for f in PER_SIDE for side in ("mover", "opponent")) + (
    "pip_lead", "contact")
N_FEATURES = len(FEATURE_NAMES)
COLUMN = {name: i for i, name in enumerate(FEATURE_NAMES)}
_WIDE = {"timing": 360 / 167, "free_pips": 360 / 167, "break_contact": 375 / 167,
         "pips": 375 / 167}
#: The range of each column, as documented above.
RANGES = {name: ((-1.0, 1.0) if name == "pip_lead" else
                 (0.0, _WIDE.get(name.split("_", 1)[-1], 1.0)))
          for name in FEATURE_NAMES}

_U = np.uint32
_M24 = _U((1 << 24) - 1)
_BAR_BIT = _U(1 << 24)
_PIP_SCALE = 167.0
#: Each feature's integer value (rolls, pips, points, checkers) times its scale is its input.
_SCALE_OF = {"hit1": 1 / 36, "hit2": 1 / 36, "pip_loss": 1 / (36 * 24), "back_escapes": 1 / 36,
             "contain": 1 / 36, "acontain": 1 / 36, "mobility": 1 / (15 * 36),
             "timing": 1 / _PIP_SCALE, "free_pips": 1 / _PIP_SCALE, "break_contact": 1 / _PIP_SCALE,
             "pips": 1 / _PIP_SCALE, "prime": 1 / 6, "backbone": 1 / 6, "anchors": 1 / 6,
             "forward_anchor": 1 / 6, "backgame": 1 / 15, "closed": 1 / 6, "dance1": 1 / 36,
             "dance2": 1 / 36}
_SCALE = np.array([_SCALE_OF[f] for f in PER_SIDE], np.float32).repeat(2)[:, None]
_F = {name: i for i, name in enumerate(PER_SIDE)}
#: The 21 rolls, (high die, low die): the 15 non-doubles (2 of the 36 each), then the doubles.
ROLLS = tuple((a, b) for a in range(2, 7) for b in range(1, a)) + tuple((d, d) for d in range(1, 7))
#: Gathers the low bit of each of the 8 bytes of a uint64 into the top byte (byte k -> bit 56 + k).
_GATHER = np.uint64(0x0102040810204080)


def _escape_table() -> np.ndarray:
    """``(4096,)`` escapes of one checker for each pattern of blocked points in front of it:
    bit ``j`` of the index = the point ``12 - j`` pips ahead is held by the other side."""
    m = np.arange(4096)
    blocked = np.zeros((4096, 25), bool)           # [:, k]: k pips ahead is blocked (k <= 12)
    for k in range(1, 13):
        blocked[:, k] = (m >> (12 - k)) & 1
    last = np.where(blocked.any(1), 24 - np.argmax(blocked[:, ::-1], axis=1), 0)
    esc = np.zeros(4096, np.int16)
    for a, b in ROLLS:
        if a != b:
            ok = (a > last) | (b > last) | ((a + b > last) & (~blocked[:, a] | ~blocked[:, b]))
            esc += 2 * ok
        else:
            alive = np.ones(4096, bool)
            ok = np.zeros(4096, bool)
            for j in range(1, 5):
                if j * a <= 24:
                    alive &= ~blocked[:, j * a]
                ok |= alive & (j * a > last)
            esc += ok
    return esc


ESCAPES = _escape_table()


def _pack(flags: np.ndarray) -> np.ndarray:
    """``(N, 24)`` bool -> ``(N,)`` uint32 bitmask, bit ``i`` = column ``i``."""
    q = np.ascontiguousarray(flags).view(np.uint64)          # (N, 3): 8 flags per word
    g = (q * _GATHER) >> np.uint64(56)
    return (g[:, 0] | (g[:, 1] << np.uint64(8)) | (g[:, 2] << np.uint64(16))).astype(_U)


def _nonzero2(x: np.ndarray) -> np.ndarray:
    """Masks with at least two bits set."""
    return (x & (x - _U(1))) != 0


def _exponent(x: np.ndarray) -> np.ndarray:
    """The float32 exponent field of each mask of points 1-24: 0 for an empty mask, else 126 +
    its highest point (bit i = point i + 1; exact: float32 holds every integer below 2**24)."""
    return x.astype(np.float32).view(np.int32) >> 23


def _top_point(x: np.ndarray) -> np.ndarray:
    """The highest point (1-24) of each mask, 0 for an empty one."""
    return np.maximum(_exponent(x) - 126, 0)


def _low_point(x: np.ndarray) -> np.ndarray:
    """The lowest point (1-24) of each mask, 0 for an empty one."""
    return _top_point(x & (~x + _U(1)))


def _double_hits(d: int, src, blots, open_, budgets):
    """A double ``d`` played by the checkers ``src`` through open points with at most k steps,
    for each k of ``budgets`` (increasing, at most 4; one checker may hit, go on and hit again):
    lists of the blots some play hits, and whether some play hits two different blots."""
    shift = _U(d)
    within, hits_out, two_out = [], [], []       # within[k - 1]: blots hit in k steps or fewer
    pos = src
    had_hit = chain = None            # where checkers that already hit stand; second hits
    for k in range(1, budgets[-1] + 1):
        pos = pos >> shift
        hit = pos & blots
        if had_hit is None:
            within.append(hit)
            had_hit = hit
        else:
            within.append(within[-1] | hit)
            had_hit = had_hit >> shift
            second = had_hit & blots
            chain = second if chain is None else chain | second
            had_hit = (had_hit & open_) | hit
        pos = pos & open_
        if k in budgets:
            # Two different checkers hit at step counts c1 <= c2, c1 + c2 <= k (one checker
            # reaching both hits them in a row: a chain).
            two = np.zeros(len(src), bool) if chain is None else chain != 0
            for c1 in range(1, k // 2 + 1):
                two |= (within[c1 - 1] != 0) & _nonzero2(within[k - c1 - 1])
            hits_out.append(within[-1])
            two_out.append(two)
    return hits_out, two_out


class _Tally:
    """Per roll of :data:`ROLLS` and row: the float32 exponent of the mask of blots hit (0: no
    hit; else 126 + the largest pips lost) and whether two blots can be hit."""

    def __init__(self, n: int):
        self.exp = np.empty((len(ROLLS), n), np.uint8)
        self.two = np.empty((len(ROLLS), n), bool)

    def add(self, i: int, hits, two) -> None:
        np.copyto(self.exp[i], _exponent(hits), casting="unsafe")
        self.two[i] = two

    def totals(self):
        """``(hit1, hit2, pip loss)``: rolls (of 36) that hit one, two, and the sum over the 36
        rolls of the largest pips lost."""
        nd, dbl = self.exp[:_ND], self.exp[_ND:]
        one = 2 * np.count_nonzero(nd, axis=0) + np.count_nonzero(dbl, axis=0)
        exp = 2 * nd.sum(0, dtype=np.int32) + dbl.sum(0, dtype=np.int32)
        two = 2 * self.two[:_ND].sum(0, dtype=np.int16) + self.two[_ND:].sum(0, dtype=np.int16)
        return one, two, exp - 126 * one


def _shots(own, one, blots, block, bar):
    """S's shots at O's blots over its 36 rolls, per row (a side S in its own numbering):
    ``own``/``one``: S's points with any checker / exactly one; ``blots``/``block``: O's
    points with one / two or more checkers (uint32 masks); ``bar``: S's checkers on the bar.
    Returns int16 ``(hit1, hit2, pip loss)`` as in :meth:`_Tally.totals`."""
    open_ = ~block & _M24
    totals = [np.zeros(len(own), np.int16) for _ in range(3)]
    # Only rows with a blot below S's rearmost checker can hit anything.
    rear = np.where(bar > 0, 25, _top_point(own))
    can_hit = (blots != 0) & (rear > _low_point(blots))
    on_bar = bar > 0
    for rows, shots in ((np.flatnonzero(can_hit & ~on_bar), _shots_free),
                        (np.flatnonzero(can_hit & on_bar), _shots_from_bar)):
        if len(rows):
            for total, part in zip(totals, shots(own[rows], one[rows], blots[rows], open_[rows],
                                                 bar[rows])):
                total[rows] = part
    return totals


def _shots_free(own, one, blots, open_, bar):
    """:func:`_shots` for rows where S has no checker on the bar: every checker may move."""
    tally = _Tally(len(own))
    # Per die s: where one step of s lands, and the blots it hits.
    reach = [None] + [own >> _U(s) for s in range(1, 7)]
    reach_open = [None] + [r & open_ for r in reach[1:]]
    hit = [None] + [r & blots for r in reach[1:]]
    hit_any = [None] + [h != 0 for h in hit[1:]]
    low = [None] + [h & (~h + _U(1)) for h in hit[1:]]
    high = [None] + [h ^ lo for h, lo in zip(hit[1:], low[1:])]
    high_any = [None] + [h != 0 for h in high[1:]]
    three = [None] + [_nonzero2(h) for h in high[1:]]
    # A target's source when it holds a single checker (it cannot also hit with the other die).
    low_src = [None] + [((lo << _U(s)) & one) for s, lo in enumerate(low[1:], start=1)]
    high_src = [None] + [((h << _U(s)) & one) for s, h in enumerate(high[1:], start=1)]
    for i, (a, b) in enumerate(ROLLS[:_ND]):
        sa, sb = _U(a), _U(b)
        ta, tb = hit[a], hit[b]
        hits = ta | tb | ((((reach_open[a] >> sb) | (reach_open[b] >> sa))) & blots)   # BG-5
        # Two hits: one checker hitting twice in a row, or two checkers each hitting with one
        # die, different blots, different sources (or a source with two): for each target t
        # of b (at most two need checking) some target of a other than t and other than the
        # one of t's source when single; with three or more targets of b there always is one.
        two = (((ta >> sb) | (tb >> sa)) & blots) != 0
        two |= hit_any[b] & ((ta & ~(low[b] | (low_src[b] >> sa))) != 0)
        two |= high_any[b] & ((ta & ~(high[b] | (high_src[b] >> sa))) != 0)
        two |= hit_any[a] & three[b]
        tally.add(i, hits, two)
    for i, (d, _) in enumerate(ROLLS[_ND:], start=_ND):
        hits, two = _double_hits(d, own, blots, open_, (4,))
        tally.add(i, hits[0], two[0])
    return tally.totals()


def _shots_from_bar(own, one, blots, open_, bar):
    """:func:`_shots` for rows where S has checkers on the bar (BG-4): they enter first; one
    alone enters with either die and the other die is free; two or more take both dice; a
    double enters up to four and plays the steps left."""
    tally = _Tally(len(own))
    single = bar == 1
    rest = 4 - np.minimum(bar, 4)
    entry = [None] + [(_BAR_BIT >> _U(s)) & open_ for s in range(1, 7)]   # 0 when closed
    entry_hit = [None] + [e & blots for e in entry[1:]]
    entry_hits = [None] + [h != 0 for h in entry_hit[1:]]
    alone = [None] + [(e != 0) & single for e in entry[1:]]
    for i, (a, b) in enumerate(ROLLS[:_ND]):
        hits = entry_hit[a] | entry_hit[b]
        two = entry_hits[a] & entry_hits[b] & ~single
        for first, then in ((a, b), (b, a)):
            e = entry[first]
            after = (((own | e) >> _U(then)) & blots & ~e) * alone[first]
            hits |= after
            two |= entry_hits[first] & (after != 0)
        tally.add(i, hits, two)
    short = np.flatnonzero(rest < 3)   # two or more on the bar: fewer steps left
    budgets = (1, 2, 3) if len(short) else (3,)
    for i, (d, _) in enumerate(ROLLS[_ND:], start=_ND):
        e = entry[d]
        more, more2 = _double_hits(d, own | e, blots & ~e, open_, budgets)
        after, after2 = more[-1], more2[-1]
        if len(short):
            pick = rest[short]
            after, after2 = after.copy(), after2.copy()
            after[short] = np.choose(pick, [0 * pick, more[0][short], more[1][short], more[2][short]])
            after2[short] = np.choose(pick, [pick < 0, more2[0][short], more2[1][short],
                                             more2[2][short]])
        entered = e != 0
        hits = entry_hit[d] | (after * entered)
        two = (entry_hits[d] & (after != 0)) | (after2 & entered)
        tally.add(i, hits, two)
    return tally.totals()


_ND = 15                                        # ROLLS[:15]: the non-doubles
#: Bits of a home-board (or O's home-board) point mask -> pips of two checkers on each:
#: sum of 2 (p - 1) over the held points p (timing's locked pips).
_LOCKED_HOME = np.array([sum(2 * j for j in range(6) if x >> j & 1) for x in range(64)], np.int16)
_LOCKED_ANCHORS = np.array([sum(2 * (18 + j) for j in range(6) if x >> j & 1) for x in range(64)],
                           np.int16)


def _window_table() -> np.ndarray:
    """``(4096,)``: the most bits set in any 6 consecutive bits of a 12-bit value."""
    x = np.arange(4096)
    return np.max([np.bitwise_count((x >> s) & 0x3F) for s in range(7)], axis=0).astype(np.int8)


_WINDOW6 = _window_table()
_POP6 = np.bitwise_count(np.arange(64)).astype(np.int16)


def _run_tables():
    """For 12-bit values: the longest run of set bits, the run ending at bit 11 (the top) and
    the run starting at bit 0."""
    x = np.arange(4096)
    longest, top, low = (np.zeros(4096, np.int16) for _ in range(3))
    run = np.zeros(4096, np.int16)
    for i in range(12):
        bit = (x >> i) & 1
        run = (run + 1) * bit
        longest = np.maximum(longest, run)
        low += (low == i) * bit                      # still unbroken from bit 0
    top[:] = run
    return longest, top, low


_RUN, _RUN_TOP, _RUN_LOW = _run_tables()


def _longest_run(x: np.ndarray) -> np.ndarray:
    """Longest run of set bits of each 24-bit mask: in the low 12 bits, in the high 12, or
    across the middle (the low half's top run and the high half's bottom run)."""
    lo, hi = x & _U(0xFFF), x >> _U(12)
    return np.maximum(np.maximum(_RUN[lo], _RUN[hi]), _RUN_TOP[lo] + _RUN_LOW[hi])


def _escapes_by_point(block: np.ndarray) -> np.ndarray:
    """``(19, N)`` escapes (of 36) of one checker on each point 7..25 (25 = the bar), with
    ``block`` the other side's held points in the checker owner's numbering; those in the
    owner's home board (points 1-6) are anchors, not a blockade, and do not count."""
    block = block & _U(0xFFFFC0)
    out = np.empty((19, len(block)), np.int16)
    for p in range(7, 26):
        window = (block >> _U(p - 13)) if p >= 13 else (block << _U(13 - p))
        np.take(ESCAPES, window & _U(0xFFF), out=out[p - 7])
    return out


#: Positions per chunk: NumPy's fresh large arrays cost page faults, small ones Python
#: overhead; 8192 positions (2 x 8192 rows) measured best.
_CHUNK = 8192


def expert_features_t(boards: np.ndarray) -> np.ndarray:
    """:func:`expert_features` transposed, ``(N_FEATURES, M)`` (one row per feature)."""
    b = np.asarray(boards)
    out = np.empty((N_FEATURES, len(b)), np.float32)
    for s in range(0, len(b), _CHUNK):
        _features(b[s:s + _CHUNK], out[:, s:s + _CHUNK])
    return out


def expert_features(boards: np.ndarray) -> np.ndarray:
    """The :data:`N_FEATURES` expert features of backgammon-family afterstates, ``(M, 40)``
    float32, columns :data:`FEATURE_NAMES` (module docstring: definitions, units, scales)."""
    return np.ascontiguousarray(expert_features_t(boards).T)


def _features(b: np.ndarray, out: np.ndarray) -> None:
    """Fill ``out`` ``(N_FEATURES, m)`` with the features of the ``m`` boards ``b``."""
    m = len(b)
    rows = 2 * m
    pts = b[:, :24]
    # Row s < m: the mover's view; row m + s: the opponent's (its points 1-24, its checkers > 0).
    view = both_sides_points(b, "backgammon")
    bar = np.concatenate([b[:, BAR], b[:, OPP_BAR]]).astype(np.int16)
    bar_o = np.concatenate([b[:, OPP_BAR], b[:, BAR]])
    # Integer values per feature and row, scaled into ``out`` at the end; ``mine`` writes a
    # side's own value, ``theirs`` one computed in the other side's rows (e.g. how well S
    # contains O is measured by O's escapes).
    raw = np.empty((len(PER_SIDE), rows), np.int16)

    def mine(name):
        return raw[_F[name]]

    def theirs(name, x):
        raw[_F[name], :m] = x[m:]
        raw[_F[name], m:] = x[:m]

    own = _pack(view > 0)
    one = _pack(view == 1)
    held = _pack(view >= 2)
    blots = _pack(view == -1)
    block = _pack(view <= -2)
    o_any = blots | block

    mine("hit1")[:], mine("hit2")[:], mine("pip_loss")[:] = _shots(own, one, blots, block, bar)

    rear = np.where(bar > 0, 25, _top_point(own)).astype(np.int16)       # S's rearmost checker
    o_rear = np.where(bar_o > 0, 0, np.where(o_any == 0, 25, _low_point(o_any))).astype(np.int16)

    esc = _escapes_by_point(block)
    cols = np.arange(rows)
    np.copyto(mine("back_escapes"), esc[np.clip(rear - 7, 0, 18), cols])
    mine("back_escapes")[rear < 7] = 36
    theirs("contain", 36 - esc[8:18].min(axis=0))                          # S's points 15-24
    acontain = np.zeros(rows, np.int16)
    for p in range(15, 26):            # S's points 15 .. its rearmost checker: fewest escapes
        np.maximum(acontain, (36 - esc[p - 7]) * (rear >= p), out=acontain)
    theirs("acontain", acontain)

    # (24, rows), C order: S's checkers per point (np.maximum with a scalar is slow here).
    pts_t = np.ascontiguousarray(pts.T)
    n = np.empty((24, rows), np.int16)
    np.multiply(pts_t, pts_t > 0, out=n[:, :m])
    rev = pts_t[::-1]
    np.multiply(rev, rev < 0, out=n[:, m:])
    np.negative(n[:, m:], out=n[:, m:])
    mobility = mine("mobility")
    np.multiply(esc[18], bar, out=mobility)
    for p in range(7, 25):
        mobility += esc[p - 7] * n[p - 1]
    # Running sums over points (row k: points 1..k) of S's checkers and of their pips.
    count_to = np.empty((25, rows), np.int16)
    pips_to = np.empty((25, rows), np.int16)
    count_to[0] = pips_to[0] = 0
    for p in range(1, 25):
        np.add(count_to[p - 1], n[p - 1], out=count_to[p])
        np.multiply(n[p - 1], p, out=pips_to[p])
        pips_to[p] += pips_to[p - 1]
    board_pips, board_count = pips_to[24], count_to[24]
    pips = mine("pips")
    np.add(board_pips, 25 * bar, out=pips)
    home_held, anchor_bits = held & _U(0x3F), held >> _U(18)
    np.copyto(mine("timing"), board_pips - board_count + 24 * bar
              - _LOCKED_HOME[home_held] - _LOCKED_ANCHORS[anchor_bits])
    back_checkers = board_count - count_to[18] + bar
    np.copyto(mine("free_pips"), pips_to[np.maximum(o_rear - 1, 0), cols])
    upto = np.minimum(o_rear, 24)
    bar_behind = bar * (o_rear < 25)
    np.copyto(mine("break_contact"), board_pips - pips_to[upto, cols] + 25 * bar_behind
              - np.maximum(o_rear - 1, 0) * (board_count - count_to[upto, cols] + bar_behind))

    np.minimum(_longest_run(held), 6, out=mine("prime"), casting="unsafe")
    np.maximum(np.maximum(_WINDOW6[held & _U(0xFFF)], _WINDOW6[(held >> _U(6)) & _U(0xFFF)]),
               _WINDOW6[held >> _U(12)], out=mine("backbone"), casting="unsafe")
    anchors = mine("anchors")
    np.take(_POP6, anchor_bits, out=anchors)
    fwd = _low_point(anchor_bits)
    np.copyto(mine("forward_anchor"), np.where(fwd > 0, 7 - fwd, 0), casting="unsafe")
    np.multiply(anchors >= 2, back_checkers, out=mine("backgame"))
    closed = mine("closed")
    np.take(_POP6, home_held, out=closed)
    theirs("dance1", closed * closed)
    theirs("dance2", 36 - (6 - closed) ** 2)

    np.multiply(raw.reshape(2 * len(PER_SIDE), m), _SCALE, out=out[:2 * len(PER_SIDE)])
    np.clip((pips[m:] - pips[:m]) * np.float32(0.01), -1, 1, out=out[-2])
    np.greater(rear[:m], o_rear[:m], out=out[-1], casting="unsafe")
