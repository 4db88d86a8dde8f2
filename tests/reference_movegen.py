"""Slow, independent reference move generator, written from RULES.md only.

Plain recursive-style Python over one position at a time: it enumerates every step sequence of
the roll, keeps every prefix as a candidate play, and then applies the selection rules.  It is
the oracle the fast batched generator (``nardy_ai/movegen.py``) is tested against, so it shares
no code with it: only the array layout of ``nardy_ai/board.py`` (28 ints, mover's view).

Layout: index 0..23 = points 1..24 (mover positive, opponent negative), 24 = mover's bar,
25 = opponent's bar, 26 = mover's checkers off, 27 = opponent's checkers off.

Interpretations of the rules (the project's, see the module docstring of tests/test_rules.py):

* COM-1/2/3: candidates are all prefixes of all step sequences (non-doubles: d1 then d2 and
  d2 then d1; doubles: up to four steps).  LN-5 removes candidates first; then only the longest
  survive; for a non-double where only one step plays, the larger die wins if any such play
  survives, else the smaller.  COM-4: the unchanged position only when nothing else survives.
* BG-HH (``no_hit_and_hide``): a checker that hit a blot on a home point (1-6) this turn is a
  *hitter*: it may not join the mover's own checkers; it may move to an empty point, hit again
  (staying a hitter), or be borne off only when no other step (other than bearing off a
  hitter) exists for that die in that intermediate position.  Where a hitter shares a point
  with covering checkers, a step from that point may move either.
* LN-3/LN-4: one checker off the head (point 24) per turn; on a first turn (all 15 on the
  head) with a double that cannot be played in full that way, two, if that plays more steps.
* LN-5: judged on the final position of the play only.
"""

from __future__ import annotations

from typing import Iterable

from nardy_ai.variants import Variant, get_variant

BAR, OPP_BAR, OFF, OPP_OFF = 24, 25, 26, 27
HEAD = 24           # long nardy: the head is point 24
BAR_FROM = 25       # pseudo point number of the bar in a step (from = 25 means "bar")
OFF_TO = 0          # pseudo point number of "off" in a step

# A step is (from_point, to_point, hit): from 25 = bar, to 0 = off.
Step = tuple[int, int, bool]
# Search state: (board tuple, frozenset of hitter points (BG-HH), checkers that left the head).
State = tuple[tuple[int, ...], frozenset, int]


def opponent_point(p: int) -> int:
    """Long nardy (LN-1): the opponent's number q of the mover's point p (and vice versa)."""
    return ((p + 11) % 24) + 1


def reference_flip(board: Iterable[int], variant: str | Variant) -> tuple[int, ...]:
    """The position seen by the other player (BG-1 mirror 25 - p, LN-1 mirror above)."""
    v = get_variant(variant)
    b = list(board)
    out = [0] * 28
    for p in range(1, 25):
        q = opponent_point(p) if v.family == "long" else 25 - p
        out[q - 1] = -b[p - 1]
    out[BAR], out[OPP_BAR] = b[OPP_BAR], b[BAR]
    out[OFF], out[OPP_OFF] = b[OPP_OFF], b[OFF]
    return tuple(out)


def six_block_illegal(board: tuple[int, ...]) -> bool:
    """LN-5: six consecutive opponent points q..q+5 held by the mover, no opponent checker ahead."""
    if board[OPP_OFF] > 0:          # a borne-off checker is ahead of every block
        return False
    held = [False] * 25             # by opponent point number q
    opp = [False] * 25
    for p in range(1, 25):
        q = opponent_point(p)
        held[q] = board[p - 1] > 0
        opp[q] = board[p - 1] < 0
    opp_seen = False                # an opponent checker on some point < q
    for q in range(1, 20):
        if all(held[q:q + 6]) and not opp_seen:
            return True
        opp_seen = opp_seen or opp[q]
    return False


def _land(b: list[int], t: int) -> bool:
    """Puts a mover's checker on point ``t`` of ``b`` (open to it: BG-2), hitting a blot there
    to the opponent's bar (BG-3); says whether it hit."""
    hit = b[t - 1] == -1
    if hit:
        b[t - 1] = 1
        b[OPP_BAR] += 1
    else:
        b[t - 1] += 1
    return hit


def _can_bear_off(board: tuple[int, ...]) -> bool:
    """COM-5: all 15 of the mover's checkers in 1-6 or off, none on the bar."""
    return board[BAR] == 0 and all(board[i] <= 0 for i in range(6, 24))


def _highest(board: tuple[int, ...]) -> int:
    for p in range(24, 0, -1):
        if board[p - 1] > 0:
            return p
    return 0


def _short_steps(state: State, d: int, v: Variant) -> list[tuple[State, Step]]:
    board, hitters, heads = state
    out: list[tuple[State, Step]] = []
    if board[BAR] > 0:                                       # BG-4: enter first
        t = 25 - d
        if board[t - 1] >= -1:
            b = list(board)
            b[BAR] -= 1
            hit = _land(b, t)
            out.append(((tuple(b), hitters, heads), (BAR_FROM, t, hit)))
        return out
    bear = _can_bear_off(board)
    top = _highest(board)
    hitter_bear_offs: list[tuple[State, Step]] = []
    for p in range(1, 25):
        n = board[p - 1]
        if n <= 0:
            continue
        kinds = []
        if p in hitters:
            kinds.append(True)
        if p not in hitters or n > 1:
            kinds.append(False)
        t = p - d
        for is_hitter in kinds:
            if t >= 1:
                target = board[t - 1]
                if target < -1:                              # BG-2: closed point
                    continue
                if is_hitter and target > 0:                 # BG-HH: no hit-and-hide
                    continue
                b = list(board)
                b[p - 1] -= 1
                hit = _land(b, t)                            # BG-3
                h = hitters
                if is_hitter:
                    h = (hitters - {p}) | {t}
                elif hit and t <= 6 and v.no_hit_and_hide:
                    h = hitters | {t}
                out.append(((tuple(b), h, heads), (p, t, hit)))
            else:
                if not bear or (t < 0 and p != top):         # COM-5
                    continue
                b = list(board)
                b[p - 1] -= 1
                b[OFF] += 1
                if is_hitter:
                    hitter_bear_offs.append(((tuple(b), hitters - {p}, heads), (p, OFF_TO, False)))
                else:
                    out.append(((tuple(b), hitters, heads), (p, OFF_TO, False)))
    if not out:                  # BG-HH: a hitter is borne off only when nothing else plays
        out = hitter_bear_offs
    return out


def _long_steps(state: State, d: int, head_limit: int) -> list[tuple[State, Step]]:
    board, hitters, heads = state
    out: list[tuple[State, Step]] = []
    bear = all(board[i] <= 0 for i in range(6, 24))        # LN-6 / COM-5
    top = _highest(board)
    for p in range(1, 25):
        if board[p - 1] <= 0:
            continue
        if p == HEAD and heads >= head_limit:                # LN-3 / LN-4
            continue
        t = p - d
        b = list(board)
        if t >= 1:
            if board[t - 1] < 0:                             # LN-2: no landing on the opponent
                continue
            b[p - 1] -= 1
            b[t - 1] += 1
        else:
            if not bear or (t < 0 and p != top):
                continue
            b[p - 1] -= 1
            b[OFF] += 1
            t = OFF_TO
        out.append(((tuple(b), hitters, heads + (p == HEAD)), (p, t, False)))
    return out


def _candidates(board: tuple[int, ...], dice: tuple[int, int], v: Variant, head_limit: int,
                six_block: bool):
    """All surviving candidate plays: {(length, first_die or 0): {afterstate: steps}}."""
    d1, d2 = dice
    orders = [(d1,) * 4] if d1 == d2 else [(d1, d2), (d2, d1)]
    long_ = v.family == "long"
    cands: dict[tuple[int, int], dict[tuple[int, ...], tuple[Step, ...]]] = {}
    for order in orders:
        level: dict[State, tuple[Step, ...]] = {(board, frozenset(), 0): ()}
        for k, d in enumerate(order, start=1):
            nxt: dict[State, tuple[Step, ...]] = {}
            for st, path in level.items():
                steps = _long_steps(st, d, head_limit) if long_ else _short_steps(st, d, v)
                for nst, step in steps:
                    if nst not in nxt:
                        nxt[nst] = path + (step,)
            if not nxt:
                break
            key = (k, order[0] if (k == 1 and d1 != d2) else 0)
            bucket = cands.setdefault(key, {})
            for st, path in nxt.items():
                after = st[0]
                if six_block and long_ and six_block_illegal(after):   # LN-5, end only
                    continue
                bucket.setdefault(after, path)
            level = nxt
    return {k: b for k, b in cands.items() if b}


def _select(board, dice, v, head_limit, six_block):
    cands = _candidates(board, dice, v, head_limit, six_block)
    if not cands:
        return 0, {board: ()}                                # COM-4
    kmax = max(k for k, _ in cands)
    if kmax == 1 and dice[0] != dice[1]:                     # COM-2: the larger die if possible
        big, small = max(dice), min(dice)
        return 1, dict(cands.get((1, big)) or cands[(1, small)])
    out: dict[tuple[int, ...], tuple[Step, ...]] = {}
    for (k, _), bucket in cands.items():
        if k == kmax:
            for after, path in bucket.items():
                out.setdefault(after, path)
    return kmax, out


def reference_plays(board, dice, variant: str | Variant, *, six_block_rule: bool = True
                    ) -> dict[tuple[int, ...], tuple[Step, ...]]:
    """Every legal afterstate (mover's view, not flipped) with one step sequence that makes it.

    ``six_block_rule=False`` switches LN-5 off; only the tests' self-checks use it."""
    v = get_variant(variant)
    board = tuple(int(x) for x in board)
    dice = (int(dice[0]), int(dice[1]))
    if len(board) != 28:
        raise ValueError("board must have 28 entries")
    if v.family == "long":
        n, plays = _select(board, dice, v, 1, six_block_rule)
        if dice[0] == dice[1] and board[HEAD - 1] == 15 and n < 4:   # LN-4
            n2, plays2 = _select(board, dice, v, 2, six_block_rule)
            if n2 > n:
                return plays2
        return plays
    return _select(board, dice, v, 0, six_block_rule)[1]


def reference_afterstates(board, dice, variant: str | Variant, *, six_block_rule: bool = True
                          ) -> set[tuple[int, ...]]:
    """The set of distinct legal afterstates; ``{board}`` when no checker can move (COM-4)."""
    return set(reference_plays(board, dice, variant, six_block_rule=six_block_rule))


def format_steps(steps: Iterable[Step]) -> str:
    """Plain step-by-step notation, e.g. ``bar/22* 13/8 8/off`` (not merged, for debugging)."""
    parts = []
    for f, t, hit in steps:
        fs = "bar" if f == BAR_FROM else str(f)
        ts = "off" if t == OFF_TO else str(t)
        parts.append(f"{fs}/{ts}{'*' if hit else ''}")
    return " ".join(parts)
