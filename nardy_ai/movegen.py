"""Batched move generation: every distinct legal afterstate of many positions at once.

This is the hot path of the platform (self-play, search, tournaments), written as pure
functions on NumPy arrays.  Python loops run only over die steps (at most four), never over
positions or afterstates.  A batch of one position (the single environment, a hint) would pay
a few hundred NumPy calls for a few dozen plays, so :func:`generate` plays it out in plain
Python over the same bit masks instead (:func:`_generate_one`), giving the same afterstates in
the same order (the hash order below), with the same steps and notation; tests compare both
paths and the slow reference (BG-HH variants keep the array path).  When numba is installed
(extra ``fast``) and ``NARDY_NO_JIT`` is not set, batches of two or more positions go to the
compiled generator of :mod:`nardy_ai.movegen_jit` instead, again with identical output
(``tests/test_movegen_jit.py``).

How it works
------------
Each position of the batch is expanded one checker step at a time.  A *frontier* row is a
partial play: the board after some steps (``int8``, the layout of :mod:`nardy_ai.board`,
padded to 32 bytes: byte 28 holds the BG-HH hitter marks, byte 29 the die of the first step).
For a step with die ``d`` the legal sources of every row are computed as 25-bit masks
(bit ``i`` = point ``i + 1``, bit 24 = the bar) with integer shifts: a checker on ``i`` may
move when the target ``i - d`` is *open*, so ``legal = own & (open << d)`` plus the bear-off
and bar-entry cases.  The set bits are unpacked into (row, source) pairs and applied with
fancy indexing.

Non-doubles are expanded in both die orders; doubles take up to four steps with sources in
non-increasing order (a standard trick, also gnubg's: any multiset of steps of one die can be
played from the back checker forward, so other orders only repeat afterstates).

Every partial play is a candidate.  The end-of-play rules then choose among them:
LN-5 (no six-block without an opponent checker ahead, judged on the final position) removes
candidates; COM-1/COM-3 keep the longest; COM-2 prefers the larger die when only one die
plays.  Finally duplicates are removed per position (a 64-bit hash, verified exactly).

LN-4 (two checkers may leave the head on a first-turn double) is "need-based": positions
where all 15 checkers stand on the head and the roll is a double are generated again with a
head limit of two, and that answer is taken only when it plays more of the roll.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .board import BAR, BEAR_OFF_SOURCES, BOARD_HASH_KEYS, BOARD_SIZE, OFF, OPP_BAR, OPP_OFF
from .variants import Variant, get_variant

_W = 32                       # padded row width (4 x uint64 for hashing)
_HIT = 28                     # BG-HH: bit i set = the checker on point i+1 hit in home this turn
_TAG = 29                     # die of the first step (COM-2 larger-die rule)
_BAR_BIT = 24
_M24 = np.uint32((1 << 24) - 1)
_OUTSIDE_HOME = np.uint32(((1 << 24) - 1) ^ 0x3F)
_ONE = np.uint32(1)
#: Index of the lowest set bit of each byte value (8 for zero), for count-trailing-zeros.
_CTZ8 = np.array([8] + [(x & -x).bit_length() - 1 for x in range(1, 256)], dtype=np.uint32)
#: LN-3: every source, or every source but the head (point 24), by "may a head checker leave".
_HEAD_OPEN = np.array([(1 << 23) - 1, (1 << 24) - 1], np.uint32)
#: Sources at or below a point index (bit 24 = the bar): the non-increasing order of doubles.
_UP_TO = np.array([(2 << i) - 1 for i in range(25)], np.uint32)


@dataclass
class Afterstates:
    """The distinct legal afterstates of a batch of positions.

    boards
        ``(M, 28)`` int8 afterstates, still from the original mover's side (not flipped).
    parent
        ``(M,)`` int64 index of the position each afterstate belongs to; non-decreasing.
    offsets
        ``(N + 1,)`` int64: the afterstates of position ``i`` are rows ``offsets[i]:offsets[i+1]``.
        Every position has at least one (the unchanged position when no checker can move).
    plays
        The play notation of each afterstate (POSITIONS.md) when asked for, else ``None``.
    steps
        ``(M,)`` number of checker steps in each play (0 when no checker could move).
    positions, dice
        The ``(N, 28)`` positions and ``(N, 2)`` rolls the afterstates were generated from
        (for agents that need them, e.g. external engines).
    """

    boards: np.ndarray
    parent: np.ndarray
    offsets: np.ndarray
    steps: np.ndarray
    plays: list[str] | None = None
    _trace: tuple | None = None
    positions: np.ndarray | None = None
    dice: np.ndarray | None = None

    def select(self, positions) -> tuple["Afterstates", np.ndarray]:
        """The afterstates of some positions of the batch, as a batch of their own.

        Returns ``(sub, rows)``: row ``j`` of ``sub.boards`` is row ``rows[j]`` of
        ``self.boards``; ``sub`` keeps the notation, positions and dice of those positions.
        """
        positions = np.asarray(positions, dtype=np.int64)
        counts = np.diff(self.offsets)[positions]
        offsets = np.zeros(len(positions) + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        rows = np.arange(offsets[-1]) - np.repeat(offsets[:-1] - self.offsets[positions], counts)
        trace = None if self._trace is None else (self._trace[0], self._trace[1][rows])
        sub = Afterstates(np.take(self.boards, rows, axis=0), np.repeat(np.arange(len(positions)), counts),
                          offsets, self.steps[rows],
                          None if self.plays is None else [self.plays[r] for r in rows], trace,
                          None if self.positions is None else self.positions[positions],
                          None if self.dice is None else self.dice[positions])
        return sub, rows

    def notation(self, rows) -> list[str]:
        """Play notation (POSITIONS.md) of the afterstates at ``rows`` (indices into ``boards``)."""
        rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        if self.plays is not None:
            return [self.plays[r] for r in rows]
        levels, code = self._trace
        code = code[rows]
        return _notation(levels, code >> 32, code & 0xFFFFFFFF)

    def __len__(self) -> int:
        return len(self.boards)

    def counts(self) -> np.ndarray:
        """Number of afterstates of each position, ``(N,)``."""
        return np.diff(self.offsets)


def _bits(mask: np.ndarray) -> np.ndarray:
    """Pack a ``(n, 32)`` bool array into ``(n,)`` uint32 (bit j = column j)."""
    return np.packbits(mask, axis=1, bitorder="little").view("<u4")[:, 0]


def _unpack_pairs(bits: np.ndarray):
    """The (row, bit) pairs of every set bit of a ``(n,)`` uint32 array, ordered by row."""
    flags = np.unpackbits(np.ascontiguousarray(bits, dtype="<u4").view(np.uint8).reshape(-1, 4),
                          axis=1, bitorder="little")
    flat = np.flatnonzero(flags.view(bool))
    return flat >> 5, flat & 31


def _ctz24(x: np.ndarray) -> np.ndarray:
    """Count trailing zeros of 24-bit values (24 for zero)."""
    b0 = _CTZ8[x & 0xFF]
    b1 = _CTZ8[(x >> 8) & 0xFF] + 8
    b2 = _CTZ8[(x >> 16) & 0xFF] + 16
    return np.where(b0 < 8, b0, np.where(b1 < 16, b1, np.minimum(b2, 24)))


def _rotate12(bits: np.ndarray) -> np.ndarray:
    """Mover point bits to the opponent's numbering: index i becomes (i + 12) mod 24 (LN-1)."""
    return ((bits >> 12) | (bits << 12)) & _M24


def _block_guard(opp_bits: np.ndarray, opp_off: np.ndarray) -> np.ndarray:
    """LN-5: the block windows (bit q-1 = opponent points q..q+5) that would be illegal.

    A window is illegal when no opponent checker stands ahead of it: every opponent checker
    is at q or behind, and none is borne off.  Constant during a turn (nothing is hit).
    """
    lowest = _ctz24(_rotate12(opp_bits)).astype(np.uint32)   # opponent's most advanced checker
    return np.where(opp_off == 0, (np.uint32(2) << lowest) - _ONE, 0).astype(np.uint32)


def _six_block(own_bits: np.ndarray, guard: np.ndarray) -> np.ndarray:
    """LN-5 on point bits: does the mover hold six in a row in a window that ``guard`` forbids."""
    held = _rotate12(own_bits)
    run = held & (held >> 1) & (held >> 2) & (held >> 3) & (held >> 4) & (held >> 5)
    return (run & guard) != 0


def six_block_violations(boards: np.ndarray) -> np.ndarray:
    """LN-5: which long-nardy positions have a six-point block with no opponent checker ahead.

    The mover holds six consecutive points of the opponent's route (opponent points q..q+5,
    q = 1..19, in the opponent's numbering) while every opponent checker stands at q or
    behind and none is borne off.  ``boards`` is ``(n, >=28)``; returns ``(n,)`` bool.
    """
    pts = np.zeros((len(boards), 32), np.int8)
    pts[:, :24] = boards[:, :24]
    guard = _block_guard(_bits(pts < 0), boards[:, OPP_OFF])
    return _six_block(_bits(pts > 0), guard)


def _step(F, own, open_, die, last_src, head_left, variant: Variant, exclude=None,
          need_own: bool = True):
    """Expand every frontier row by one checker step with its die.

    ``own`` are the rows' point bits holding mover checkers, ``open_`` the points a checker
    may land on (fixed for the whole turn: the mover never closes a point to itself).
    Returns the children and, per child, the frontier row it came from, the source bit
    (0-23 point index, 24 bar), the target column (0-23, or OFF), whether it hit and its own
    point bits; and the legal source bits of each row before ``exclude`` was applied.
    """
    d = die.astype(np.uint32)
    short = not variant.is_long

    # Moves along the board: target i - d must be open.
    legal = own & ((open_ << d) & _M24)
    # Bear-off (COM-5): all checkers home (and none on the bar); exact point, or the highest
    # occupied point when the die is larger than it.
    home = own & 0x3F
    all_home = (own & _OUTSIDE_HOME) == 0
    if short:
        all_home &= F[:, BAR] == 0
    bear_off = BEAR_OFF_SOURCES[(d << np.uint32(6)) | home]
    bear_off *= all_home
    legal |= bear_off
    if variant.head_rule:
        legal &= _HEAD_OPEN[(head_left > 0).view(np.uint8)]
    hitter_branch = None
    if variant.no_hit_and_hide:
        # BG-HH: a checker that hit in its home may not go on to join its own checkers.
        marks = F[:, _HIT].astype(np.uint32)
        single = _bits(F == 1) & 0x3F
        own_target = (own << d) & _M24
        only_hitter = marks & single
        shared = marks & ~single
        moves = legal & ~bear_off
        legal &= ~(only_hitter & own_target & ~bear_off)
        hitter_branch = shared & moves & ~own_target
        # The hitter may be borne off only when that die has no other step.
        hitter_off = only_hitter & bear_off
        others = (legal & ~hitter_off) | hitter_branch
        legal &= ~np.where(others != 0, hitter_off, 0).astype(np.uint32)
    if short:
        # BG-4: while on the bar only entering steps: die d enters on point 25 - d.
        on_bar = F[:, BAR] > 0
        enter = ((open_ >> (np.uint32(24) - d)) & _ONE) << np.uint32(_BAR_BIT)
        legal = np.where(on_bar, enter, legal).astype(np.uint32)
        if hitter_branch is not None:
            hitter_branch = np.where(on_bar, 0, hitter_branch).astype(np.uint32)
    # Doubles: sources in non-increasing order.
    legal &= _UP_TO[last_src]
    first_legal = legal
    if exclude is not None:
        legal = legal & ~exclude

    rows, src = _unpack_pairs(legal)
    is_hitter_move = None
    if hitter_branch is not None and hitter_branch.any():
        hitter_branch &= _UP_TO[last_src]
        r2, s2 = _unpack_pairs(hitter_branch)
        rows = np.concatenate([rows, r2])
        src = np.concatenate([src, s2])
        is_hitter_move = np.zeros(len(rows), bool)
        is_hitter_move[len(rows) - len(r2):] = True

    child = np.take(F, rows, axis=0)
    m = len(rows)
    dd = np.take(die, rows).astype(np.int64)
    src = src.astype(np.int64)
    tgt = src - dd
    if short:
        tgt = np.where(src == _BAR_BIT, 24 - dd, tgt)
    tgt = np.where(tgt < 0, OFF, tgt)
    flat = child.reshape(-1)
    base = np.arange(0, m * _W, _W)
    at_src = base + src
    flat[at_src] -= 1
    at_tgt = base + tgt
    if short:
        dest = flat[at_tgt]
        hit = dest == -1
        flat[at_tgt] = np.where(hit, 1, dest + 1)
        flat[base + OPP_BAR] += hit
    else:
        flat[at_tgt] += 1              # LN-2: never onto an opponent checker, so no hits
        hit = np.zeros(m, bool)
    if not need_own:
        return child, rows, src, tgt, hit, None, first_legal
    child_own = np.take(own, rows)
    child_own &= ~np.where(flat[at_src] == 0, _ONE << src.astype(np.uint32), 0).astype(np.uint32)
    child_own |= np.where(tgt < 24, _ONE << np.minimum(tgt, 31).astype(np.uint32), 0).astype(np.uint32)
    child_own &= _M24
    if variant.no_hit_and_hide:
        marks = child[:, _HIT].astype(np.int64)
        src_mark = (marks >> np.minimum(src, 23)) & 1
        hitter_moves = (src < 6) & (src_mark == 1) & (flat[at_src] == 0)
        if is_hitter_move is not None:
            hitter_moves |= is_hitter_move
        marks = np.where(hitter_moves, marks & ~(1 << np.minimum(src, 23)), marks)
        lands_marked = (tgt < 6) & (hit | hitter_moves)
        marks = np.where(lands_marked, marks | (1 << np.minimum(tgt, 23)), marks)
        child[:, _HIT] = marks.astype(np.int8)
    return child, rows, src, tgt, hit, child_own, first_legal


@dataclass
class _Level:
    boards: np.ndarray     # (m, 32)
    parent: np.ndarray     # (m,) position index
    back: np.ndarray       # (m,) row in the previous level
    src: np.ndarray
    tgt: np.ndarray
    hit: np.ndarray
    own: np.ndarray        # (m,) uint32 bits of the points holding mover checkers

    def step(self, j: int):
        """Row ``j``'s checker step and its row in the previous level (for the notation)."""
        return self.src[j], self.tgt[j], self.hit[j], self.back[j]


def _expand(P, idx, hi, lo, variant: Variant, head_limit):
    """All partial plays of positions ``P[idx]`` (padded rows); ``hi``/``lo`` are the dice,
    ``head_limit`` (per position of ``idx``) how many checkers may leave the head (LN-3/LN-4).

    Returns the list of levels: level k holds the plays of k checker steps.
    """
    n = len(idx)
    base = np.take(P, idx, axis=0)
    double = hi[idx] == lo[idx]
    zeros = np.zeros(n, np.int64)
    own0 = _bits(base > 0) & _M24
    open0 = (_bits(base >= 0) if variant.is_long else _bits(base >= -1)) & _M24
    levels = [_Level(base, idx, np.arange(n), zeros, zeros, np.zeros(n, bool), own0)]
    # The frontier: doubles once, non-doubles in both orders (order True: smaller die first).
    loc = np.concatenate([np.arange(n), np.nonzero(~double)[0]])
    order = np.arange(len(loc)) >= n
    back = loc.copy()
    F = np.take(base, loc, axis=0)
    own = np.take(own0, loc)
    last_src = np.full(len(F), _BAR_BIT, np.int64)
    start_head = base[:, 23].astype(np.int64)
    exclude = start_legal_hi = None
    for k in range(4):
        if len(F) == 0:
            break
        die = np.where(order ^ (k == 1), lo[idx[loc]], hi[idx[loc]])
        head_left = head_limit[loc] - (start_head[loc] - F[:, 23]) if variant.head_rule else None
        # Point bits of the children are needed to go on (doubles) and for LN-5.
        need_own = k == 0 or variant.six_block_rule or bool(double[loc].any())
        child, rows, src, tgt, hit, c_own, legal = _step(F, own, np.take(open0, loc), die, last_src,
                                                         head_left, variant, exclude, need_own)
        if k == 0:
            child[:, _TAG] = die[rows]
            if not variant.no_hit_and_hide:
                # Smaller die first, then a larger-die step that was already legal at the
                # start: the larger-die-first order gives the same afterstate, so skip it.
                start_legal_hi = legal[:n]
        c_loc = loc[rows]
        levels.append(_Level(child, idx[c_loc], back[rows], src, tgt, hit, c_own))
        # Non-doubles stop after two steps, doubles after four.
        if k == 0:
            F, own, loc, order, back = child, c_own, c_loc, order[rows], np.arange(len(rows))
            last_src = np.where(double[loc] & (not variant.no_hit_and_hide), src, _BAR_BIT)
        else:
            go = double[c_loc]
            back = np.flatnonzero(go)
            if variant.no_hit_and_hide and len(back):
                # BG-HH makes the order of a double's steps matter (a hitter may move on only
                # to an empty point), so every order is tried and repeated partial plays
                # (same board, same hitter marks) are merged instead.
                back = back[_dedupe(np.take(child, back, axis=0), idx[c_loc[back]], with_marks=True)]
            F, loc, order = np.take(child, back, axis=0), c_loc[back], order[rows][back]
            own = c_own[back] if c_own is not None else None
            last_src = np.where(variant.no_hit_and_hide, _BAR_BIT, src[back])
        exclude = None
        if k == 0 and start_legal_hi is not None:
            exclude = np.where(order, start_legal_hi[loc], 0).astype(np.uint32)
    return levels


def _choose(levels, n_pos: int, hi, lo, variant: Variant, guard=None):
    """Apply LN-5, COM-1/COM-3 (longest play) and COM-2 (larger die) to the candidates.

    Returns per level a bool mask of the candidates that are legal plays, and the best
    (longest) level of each position.
    """
    valid = []
    for k, lev in enumerate(levels):
        if k and variant.six_block_rule:
            valid.append(~_six_block(lev.own, np.take(guard, lev.parent)))
        else:
            valid.append(np.ones(len(lev.boards), bool))
    best = np.zeros(n_pos, np.int64)
    for k in range(1, len(levels)):
        seen = np.zeros(n_pos, bool)
        seen[levels[k].parent[valid[k]]] = True
        best[seen] = k
    # COM-2: when only one die can be played, the larger one if it can be.
    if len(levels) > 1:
        lev1 = levels[1]
        larger = lev1.boards[:, _TAG] == hi[lev1.parent]
        has_larger = np.zeros(n_pos, bool)
        has_larger[lev1.parent[valid[1] & larger]] = True
        single = (best[lev1.parent] == 1) & (hi[lev1.parent] != lo[lev1.parent])
        valid[1] &= ~(single & has_larger[lev1.parent] & ~larger)
    keep = [valid[k] & (best[lev.parent] == k) for k, lev in enumerate(levels)]
    return keep, best


def _dedupe(boards32, parent, with_marks: bool = False):
    """Order candidates by position and drop repeated afterstates; returns kept indices.

    Bytes 28-31 (step bookkeeping) are ignored, except the BG-HH hitter marks (byte 28)
    when ``with_marks`` (merging partial plays, whose marks constrain the next steps).  The 64-bit key is the position index and a
    36-bit hash of the board; equal keys are verified byte for byte, and a hash collision
    (two different boards, one key) falls back to an exact sort.
    """
    words = boards32.view("<u8")
    last = np.uint64(0xFFFFFFFFFF if with_marks else 0xFFFFFFFF)
    h = words[:, 0] * BOARD_HASH_KEYS[0]
    h += words[:, 1] * BOARD_HASH_KEYS[1]
    h += words[:, 2] * BOARD_HASH_KEYS[2]
    h += (words[:, 3] & last) * BOARD_HASH_KEYS[3]
    h ^= h >> np.uint64(29)      # products only carry differences upwards: fold them back
    h *= BOARD_HASH_KEYS[0]
    h ^= h >> np.uint64(32)
    m = len(words)
    pos_bits = max(1, int(parent.max()).bit_length()) if m else 1
    idx_bits = max(1, (m - 1).bit_length())
    hash_bits = 64 - pos_bits - idx_bits
    if hash_bits >= 24:
        # One packed key (position, hash, candidate index): a plain sort is ~3x an argsort.
        key = (parent.astype(np.uint64) << np.uint64(hash_bits + idx_bits)) \
            | ((h >> np.uint64(64 - hash_bits)) << np.uint64(idx_bits)) | np.arange(m, dtype=np.uint64)
        ks = np.sort(key)
        order = (ks & np.uint64((1 << idx_bits) - 1)).astype(np.int64)
        ks >>= np.uint64(idx_bits)
    else:
        key = (parent.astype(np.uint64) << np.uint64(36)) | (h >> np.uint64(28))
        order = np.argsort(key)
        ks = key[order]
    same = np.zeros(len(ks), bool)
    np.equal(ks[1:], ks[:-1], out=same[1:])
    i = np.flatnonzero(same)
    if len(i):
        a = np.take(words, order[i], axis=0)
        b = np.take(words, order[i - 1], axis=0)
        a[:, 3] &= last
        b[:, 3] &= last
        if not ((a == b).all() and (parent[order[i]] == parent[order[i - 1]]).all()):
            rows = np.zeros((len(boards32), 32), np.int8)
            rows[:, :BOARD_SIZE + with_marks] = boards32[:, :BOARD_SIZE + with_marks]
            rows[:, 29:32] = parent.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3]
            _, first = np.unique(rows.view("V32")[:, 0], return_index=True)
            return first[np.argsort(parent[first], kind="stable")]
    return order[~same]


def _notation(levels, lev_idx, row_idx):
    """Canonical play notation for each chosen candidate (traced back through its steps)."""
    plays = []
    for k, j in zip(lev_idx, row_idx):
        steps = []
        while k > 0:
            src, tgt, hit, j = levels[k].step(j)
            steps.append((int(src), int(tgt), bool(hit)))
            j = int(j)
            k -= 1
        plays.append(format_play(steps, levels[0].boards[j]))
    return plays


def _point_name(index: int, source: bool) -> str:
    if source and index == _BAR_BIT:
        return "bar"
    if not source and index == OFF:
        return "off"
    return str(index + 1)


def format_play(steps, board) -> str:
    """Canonical notation of a play, from its checker steps and the position it starts from.

    ``steps`` are ``(src, tgt)`` pairs in any order: ``src`` a point index 0-23 or 24 (bar),
    ``tgt`` a point index or ``OFF``.  A checker that moves on from where it landed is written
    as one move (``24/18/13`` becomes ``24/13``); moves are listed from the back checker
    forward, so that applying them in the written order replays the play; a ``*`` marks each
    landing on a blot in that order (an intermediate point is written only where it hit);
    repeats are written ``8/5(2)`` as gnubg does.
    """
    chains: list[list[int]] = [[src, tgt] for src, tgt, *_ in steps]
    merged = True
    while merged:          # join a move ending where another starts (the same checker)
        merged = False
        for a in chains:
            for b in chains:
                if b is not a and b[0] == a[-1] and a[-1] != OFF:
                    a.extend(b[1:])
                    chains.remove(b)
                    merged = True
                    break
            if merged:
                break
    chains.sort(key=lambda c: (-c[0], -(c[-1] if c[-1] != OFF else -1)))
    pts = [int(x) for x in np.asarray(board)[:24]]
    texts = []
    for chain in chains:
        text = _point_name(chain[0], True)
        for i, tgt in enumerate(chain[1:], start=1):
            hit = False
            if tgt != OFF:
                hit = pts[tgt] == -1
                pts[tgt] = 1 if hit else pts[tgt] + 1
            if chain[i - 1] != _BAR_BIT:
                pts[chain[i - 1]] -= 1
            if hit or i == len(chain) - 1:
                text += "/" + _point_name(tgt, False) + ("*" if hit else "")
        texts.append(text)
    out: list[str] = []
    i = 0
    while i < len(texts):
        j = i
        while j + 1 < len(texts) and texts[j + 1] == texts[i]:
            j += 1
        out.append(texts[i] + (f"({j - i + 1})" if j > i else ""))
        i = j + 1
    return " ".join(out)



# --- one position: the same plays, in the same order, by plain Python over bit masks -------------

#: Whether :func:`generate` takes the one-position path for a batch of one (False: the array
#: path for every batch, as before that path existed; for benchmarks and tests).
ONE_POSITION_PATH = True

#: ``BEAR_OFF_SOURCES`` and ``_UP_TO`` as Python ints (the one-position path works on Python ints).
_BEAR_OFF_INT = [int(x) for x in BEAR_OFF_SOURCES]
_UP_TO_INT = [int(x) for x in _UP_TO]
_M24_INT = (1 << 24) - 1
_OUTSIDE_HOME_INT = int(_OUTSIDE_HOME)
_HEAD_BIT = 1 << 23


class _Trace:
    """The checker steps of one position's partial plays at one level: ``steps[j]`` is
    ``(source, target, hit, row in the previous level)`` of row ``j`` (what :func:`_notation`
    reads, as from a :class:`_Level`); ``boards`` the position itself at level 0."""
    __slots__ = ("boards", "steps")

    def __init__(self, steps=None, boards=None):
        self.steps, self.boards = steps, boards

    def step(self, j: int):
        return self.steps[j]


def _rotate12_int(bits: int) -> int:
    return ((bits >> 12) | (bits << 12)) & _M24_INT


def _six_block_int(own: int, guard: int) -> bool:
    held = _rotate12_int(own)
    return (held & (held >> 1) & (held >> 2) & (held >> 3) & (held >> 4) & (held >> 5) & guard) != 0


def _expand_one(base: bytearray, hi: int, lo: int, v: Variant, head_limit: int, guard: int):
    """Every partial play of one position (``base``: 32 bytes, int8 values as uint8), level by
    level in the order of :func:`_expand` (frontier rows in order, their sources ascending),
    and the legal ones (:func:`_choose`).  Returns ``(best, boards, traces)``: the longest
    legal level, the candidate boards of that level (bytes, None where a rule drops one, in
    order) and the step traces of every level."""
    short = not v.is_long
    head_rule = v.head_rule
    six = v.six_block_rule
    own0 = 0
    open0 = 0
    for i in range(24):
        x = base[i]
        if 0 < x < 128:
            own0 |= 1 << i
        if x < 128 or (short and x == 255):
            open0 |= 1 << i
    double = hi == lo
    start_head = base[23] if head_rule else 0
    traces = [_Trace()]
    # Frontier rows: (board, own bits, order flag (True: the smaller die first), last source);
    # from level 1 on, frontier row r is row r of the previous level.
    rows = [(base, own0, False, 24)]
    if not double:
        rows.append((base, own0, True, 24))
    levels: list[list] = [[base]]                  # candidate boards per level
    tags: list[int] = []                           # level 1: the die of the first step
    owns: list[list[int]] = [[own0]]
    start_legal_hi = 0
    for k in range(4):
        if not rows:
            break
        steps: list[tuple] = []
        boards: list[bytearray] = []
        own_out: list[int] = []
        nxt: list[tuple] = []
        go_on = k == 0 or (double and k < 3)       # the children are expanded further
        need_own = go_on or six
        for r, (F, own, order, last_src) in enumerate(rows):
            d = lo if order ^ (k == 1) else hi
            legal = own & ((open0 << d) & _M24_INT)
            if (own & _OUTSIDE_HOME_INT) == 0 and (not short or F[24] == 0):
                legal |= _BEAR_OFF_INT[(d << 6) | (own & 0x3F)]
            if head_rule and head_limit - (start_head - F[23]) <= 0:
                legal &= ~_HEAD_BIT
            if short and F[24]:
                legal = ((open0 >> (24 - d)) & 1) << 24
            legal &= _UP_TO_INT[last_src]
            if k == 0:
                if r == 0:
                    start_legal_hi = legal
            elif k == 1 and order:
                legal &= ~start_legal_hi
            back = r if k else 0
            while legal:
                low = legal & -legal
                legal ^= low
                s = low.bit_length() - 1
                t = s - d
                if t < 0:
                    t = 24 - d if (short and s == 24) else OFF
                c = F[:]
                c[s] -= 1
                hit = False
                if short:
                    dest = c[t]
                    if dest == 255:
                        c[t] = 1
                        c[OPP_BAR] += 1
                        hit = True
                    else:
                        c[t] = dest + 1
                else:
                    c[t] += 1
                if k == 0:
                    tags.append(d)               # (bytes 28-31 stay zero: a board's key is all 32)
                boards.append(c)
                steps.append((s, t, hit, back))
                if need_own:
                    c_own = own
                    if c[s] == 0:
                        c_own &= ~low
                    if t < 24:
                        c_own |= 1 << t
                    c_own &= _M24_INT
                    own_out.append(c_own)
                    if go_on:
                        nxt.append((c, c_own, order, s if double or k else 24))
        levels.append(boards)
        owns.append(own_out)
        traces.append(_Trace(steps))
        rows = nxt
    # _choose: LN-5 (on the final position), the longest level, COM-2 (the larger die).
    valid = [None] * len(levels)
    best = 0
    for k in range(1, len(levels)):
        if six:
            valid[k] = [not _six_block_int(o, guard) for o in owns[k]]
            if any(valid[k]):
                best = k
        elif levels[k]:
            best = k
    if best == 0:
        return 0, [bytes(base)], traces
    keep = valid[best]
    if best == 1 and not double:
        ok1 = keep if keep is not None else [True] * len(levels[1])
        if any(o and t == hi for o, t in zip(ok1, tags)):
            keep = [o and t == hi for o, t in zip(ok1, tags)]
    cands = levels[best]
    if keep is None:
        return best, cands, traces
    return best, [c if ok else None for c, ok in zip(cands, keep)], traces


def _generate_one(boards: np.ndarray, dice: np.ndarray, v: Variant) -> Afterstates | None:
    """:func:`generate` for one position (``boards`` ``(1, 28)``) without its per-call array
    overhead: the same afterstates in the same order, the same steps and notation.  None when
    two different afterstates share a hash key (then the batched path decides, exactly)."""
    b = boards[0]
    d0, d1 = int(dice[0, 0]), int(dice[0, 1])
    hi, lo = (d0, d1) if d0 >= d1 else (d1, d0)
    base = bytearray(_W)
    base[:BOARD_SIZE] = b.tobytes()
    guard = 0
    if v.six_block_rule:
        opp = 0
        for i in range(24):
            if base[i] >= 128:
                opp |= 1 << i
        if base[OPP_OFF] == 0:
            r = _rotate12_int(opp)
            lowest = (r & -r).bit_length() - 1 if r else 24
            guard = (2 << lowest) - 1
    best, cands, traces = _expand_one(base, hi, lo, v, 1, guard)
    if v.head_rule and base[23] == 15 and hi == lo:
        best2, cands2, traces2 = _expand_one(base, hi, lo, v, 2, guard)
        if best2 > best:           # LN-4: the second head checker plays more of the roll
            best, cands, traces = best2, cands2, traces2
    first: dict[bytes, tuple[int, int]] = {}
    m = 0
    for j, c in enumerate(cands):
        if c is None:
            continue
        key = bytes(c)
        if key not in first:
            first[key] = (m, j)
        m += 1
    # _dedupe's order: by a hash of the board (then the candidate's index), for one position.
    keys = list(first)
    ranks = list(first.values())
    words = np.frombuffer(b"".join(keys), "<u8").reshape(-1, 4)
    h = words[:, 0] * BOARD_HASH_KEYS[0]
    h += words[:, 1] * BOARD_HASH_KEYS[1]
    h += words[:, 2] * BOARD_HASH_KEYS[2]
    h += words[:, 3] * BOARD_HASH_KEYS[3]
    h ^= h >> np.uint64(29)
    h *= BOARD_HASH_KEYS[0]
    h ^= h >> np.uint64(32)
    idx_bits = max(1, (m - 1).bit_length())
    top = (h >> np.uint64(1 + idx_bits)).tolist()  # the hash's top 63 - idx_bits bits (one position)
    order = [i for _, _, i in sorted(zip(top, [r[0] for r in ranks], range(len(keys))))]
    for i in range(1, len(order)):
        if top[order[i]] == top[order[i - 1]]:
            return None
    n_out = len(order)
    rows = np.frombuffer(bytearray(b"".join([keys[i][:BOARD_SIZE] for i in order])), np.int8).reshape(n_out,
                                                                                                   BOARD_SIZE)
    traces[0].boards = boards
    code = np.array([ranks[i][1] for i in order], np.int64) + (best << 32)
    return Afterstates(rows, np.zeros(n_out, np.int64), np.array([0, n_out], np.int64),
                       np.full(n_out, best, np.int64), None, (traces, code), boards, dice)


def generate(boards, dice, variant: str | Variant, notation: bool = False) -> Afterstates:
    """Every distinct legal afterstate of each position with its roll.

    boards
        ``(N, 28)`` int8 positions (layout of :mod:`nardy_ai.board`, mover on roll).  Not
        validated here (the hot path); validate input from outside with ``board.validate``.
    dice
        ``(N, 2)`` ints 1-6.
    notation
        Also return the play notation of each afterstate (slower: a Python loop).
    """
    v = get_variant(variant)
    boards = np.asarray(boards, dtype=np.int8)
    dice = np.asarray(dice)
    out = None
    if len(boards) == 1 and ONE_POSITION_PATH and not v.no_hit_and_hide:
        out = _generate_one(boards, dice, v)
    elif len(boards) > 1 and not v.no_hit_and_hide and _jit_enabled():
        # The compiled generator (numba, when installed; see nardy_ai.movegen_jit).  Both
        # answer None where the array path must decide.
        out = _generate_jit(boards, dice, v)
    if out is not None:
        if notation:
            out.plays = out.notation(np.arange(len(out.boards)))
        return out
    return generate_batched(boards, dice, v, notation)


#: The compiled generator (:mod:`nardy_ai.movegen_jit`), imported on first use; False when
#: numba is missing or ``NARDY_NO_JIT`` is set (read at that first use).
_JIT = None


def _jit_enabled() -> bool:
    """Whether :func:`generate` may run the compiled generator (numba importable and the
    environment variable ``NARDY_NO_JIT`` unset when first asked)."""
    global _JIT
    if _JIT is None:
        from . import movegen_jit
        _JIT = movegen_jit if movegen_jit.enabled() else False
    return _JIT is not False


def _generate_jit(boards: np.ndarray, dice: np.ndarray, v: Variant) -> Afterstates | None:
    """:func:`generate_batched` by the compiled kernel: the same afterstates, order, steps and
    notation; None where the array path must decide (then it runs)."""
    res = _JIT.generate_arrays(boards, dice, v.is_long)
    if res is None:
        return None
    rows, offsets, code, (src, tgt, hit, back) = res
    n = len(boards)
    flat = _Level(None, None, back, src, tgt, hit, None)     # every level's steps, one row space
    levels = [_Level(boards, None, None, None, None, None, None), flat, flat, flat, flat]
    parent = np.repeat(np.arange(n), np.diff(offsets))
    return Afterstates(rows, parent, offsets, code >> 32, None, (levels, code), boards, dice)


def generate_batched(boards, dice, variant: str | Variant, notation: bool = False) -> Afterstates:
    """:func:`generate` by array operations over the whole batch, whatever its size (what
    :func:`generate` runs except for a single position, where plain Python over bit masks
    gives the same afterstates, in the same order, with less overhead)."""
    v = get_variant(variant)
    boards = np.asarray(boards, dtype=np.int8)
    dice = np.asarray(dice)
    n = len(boards)
    P = np.zeros((n, _W), np.int8)
    P[:, :BOARD_SIZE] = boards
    hi = dice.max(axis=1).astype(np.int64)
    lo = dice.min(axis=1).astype(np.int64)
    origin = np.arange(n)                # the input position each (possibly extra) row plays
    head_limit = np.ones(n, np.int64)
    first = np.zeros(0, np.int64)
    if v.head_rule:
        # LN-4: on a first turn (all 15 on the head) a double is also tried with two checkers
        # off the head, as an extra position; that answer is taken only if it plays more.
        first = np.flatnonzero((boards[:, 23] == 15) & (hi == lo))
        if len(first):
            P = np.concatenate([P, P[first]])
            hi, lo = np.concatenate([hi, hi[first]]), np.concatenate([lo, lo[first]])
            origin = np.concatenate([origin, first])
            head_limit = np.concatenate([head_limit, np.full(len(first), 2)])
    n_all = len(P)
    guard = None
    if v.six_block_rule:
        guard = _block_guard(_bits(P < 0) & _M24, P[:, OPP_OFF])
    levels = _expand(P, np.arange(n_all), hi, lo, v, head_limit)
    keep, best = _choose(levels, n_all, hi, lo, v, guard)
    if len(first):
        two = best[n:] > best[first]          # the second head checker plays more of the roll
        drop = np.zeros(n_all, bool)
        drop[first[two]] = True
        drop[n:][~two] = True
        keep = [m & ~drop[lev.parent] for m, lev in zip(keep, levels)]
    parts = [np.flatnonzero(m) for m in keep]
    # Where each candidate came from (level, row), for its step count and notation.
    B = np.concatenate([np.take(lev.boards, rows, axis=0) for lev, rows in zip(levels, parts)])
    par = np.concatenate([np.take(origin, np.take(lev.parent, rows)) for lev, rows in zip(levels, parts)])
    code = np.concatenate([rows + (k << 32) for k, rows in enumerate(parts)])
    kept = _dedupe(B, par)
    out_par = np.take(par, kept)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(out_par, minlength=n), out=offsets[1:])
    code = np.take(code, kept)
    out = Afterstates(np.take(B, kept, axis=0)[:, :BOARD_SIZE], out_par, offsets, code >> 32,
                      None, (levels, code), boards, dice)
    if notation:
        out.plays = out.notation(np.arange(len(kept)))
    return out


# --- segments: the afterstates of one position are one segment of rows ---------------------

def segment_ids(offsets: np.ndarray) -> np.ndarray:
    """The position index of every afterstate row, ``(M,)`` int64, from ``(N + 1,)`` offsets."""
    offsets = np.asarray(offsets, dtype=np.int64)
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


def segment_argmax(scores: np.ndarray, offsets: np.ndarray,
                   rng: np.random.Generator | None = None) -> np.ndarray:
    """Per-position argmax over afterstate rows: ``(N,)`` absolute rows into ``scores``.

    scores
        ``(M,)`` one number per afterstate (higher is better, any unit).
    offsets
        ``(N + 1,)`` segment bounds as in :class:`~nardy_ai.movegen.Afterstates`; every
        segment must be non-empty.
    rng
        When given, ties are broken uniformly at random among the best rows; without it the
        first best row wins.
    """
    scores = np.asarray(scores)
    offsets = np.asarray(offsets, dtype=np.int64)
    m = len(scores)
    starts = offsets[:-1]
    seg = segment_ids(offsets)
    best = scores == np.maximum.reduceat(scores, starts)[seg]
    if rng is not None:
        # Among the best rows of a segment, the one with the largest uniform key wins.
        key = np.where(best, rng.random(m), -1.0)
        best = key == np.maximum.reduceat(key, starts)[seg]
    return np.minimum.reduceat(np.where(best, np.arange(m), m), starts)
