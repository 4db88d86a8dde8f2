"""The fast batched move generator against the slow reference, on many positions.

* Random play: for each variant, games played from the start position by choosing uniformly
  among the reference's afterstates (then flipping), with seeded random dice.  Every position
  met is compared: the fast generator's set of afterstates must equal the reference's.
* Biased positions that random play rarely reaches: bear-offs (with opponent blots in the home,
  so BG-HH hitters can be borne off), checkers on the bar against a (nearly) closed board,
  long-nardy positions with five points of a six-block already held, all-on-the-head starts
  against random opponent walls (LN-4), arbitrary scattered positions.
* Hypothesis properties of the fast generator: 15 checkers a side in every afterstate, no
  duplicate afterstate per parent, the no-move case returns the position itself, every
  afterstate is reachable (in the reference set), and the batch bookkeeping (parent, offsets).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from movegen_helpers import diff_message, fast_generate, play
from nardy_ai.board import flip, start_board
from nardy_ai.variants import get_variant
from reference_movegen import BAR, OFF, OPP_BAR, OPP_OFF, reference_afterstates

SHORT = ("backgammon", "short_caucasian", "short_trictrac")
LONG = ("long", "long_dave")
VARIANTS = SHORT + LONG
ALL_ROLLS = {(a, b) for a in range(1, 7) for b in range(a, 7)}

RANDOM_PLAY_POSITIONS = 2000     # per variant
BIASED_POSITIONS = 300           # per kind and variant
MAX_PLIES = 400                  # a random long-nardy game could in principle lock up


def random_dice(rng: np.random.Generator) -> tuple[int, int]:
    d = rng.integers(1, 7, size=2)
    return int(d[0]), int(d[1])


def random_play_positions(variant: str, n: int, seed: int):
    """``n`` (board, dice, reference afterstates) met in random games of ``variant``."""
    rng = np.random.default_rng(seed)
    out = []
    board, plies = tuple(int(x) for x in start_board(variant)), 0
    while len(out) < n:
        dice = random_dice(rng)
        ref = reference_afterstates(board, dice, variant)
        out.append((board, dice, ref))
        after = sorted(ref)[rng.integers(len(ref))]
        plies += 1
        if after[OFF] == 15 or plies >= MAX_PLIES:             # COM-6: the game is over
            board, plies = tuple(int(x) for x in start_board(variant)), 0
        else:
            board = tuple(int(x) for x in flip(np.array(after, dtype=np.int8), variant))
    return out


# --- biased positions --------------------------------------------------------------------------

def _scatter(rng, b, count, points, sign):
    """Put ``count`` checkers of one side (sign +1 mover / -1 opponent) on ``points`` (point
    numbers) that the other side does not hold, a few points at a time."""
    points = [p for p in points if b[p - 1] * sign >= 0]
    if count == 0:
        return True
    if not points:
        return False
    chosen = rng.choice(points, size=min(len(points), int(rng.integers(1, 7))), replace=False)
    for _ in range(count):
        p = int(rng.choice(chosen))
        b[p - 1] += sign
    return True


def _finish(b):
    b[OFF] = 15 - sum(x for x in b[:24] if x > 0) - b[BAR]
    b[OPP_OFF] = 15 - sum(-x for x in b[:24] if x < 0) - b[OPP_BAR]
    assert b[OFF] >= 0 and b[OPP_OFF] >= 0
    return tuple(b)


def short_bear_off(rng):
    b = [0] * 28
    on = int(rng.integers(1, 16))
    _scatter(rng, b, on, range(1, 7), +1)
    b[OPP_BAR] = int(rng.integers(0, 3))
    blots = [p for p in range(1, 7) if b[p - 1] == 0 and rng.random() < 0.3]
    for p in blots:
        b[p - 1] = -1
    rest = 15 - b[OPP_BAR] - len(blots) - int(rng.integers(0, 4))
    _scatter(rng, b, rest, range(7, 25), -1)
    return _finish(b)


def short_bar_vs_board(rng):
    b = [0] * 28
    b[BAR] = int(rng.integers(1, 5))
    opp = 15
    for p in range(19, 25):
        r = rng.random()
        k = min(opp, 2 + int(rng.integers(0, 2)) if r < 0.6 else 1 if r < 0.8 else 0)
        b[p - 1] = -k
        opp -= k
    _scatter(rng, b, opp, range(1, 19), -1)
    _scatter(rng, b, 15 - b[BAR] - int(rng.integers(0, 3)), range(1, 19), +1)
    return _finish(b)


def short_scattered(rng):
    b = [0] * 28
    b[BAR], b[OPP_BAR] = int(rng.integers(0, 3)), int(rng.integers(0, 3))
    _scatter(rng, b, 15 - b[BAR] - int(rng.integers(0, 3)), range(1, 25), +1)
    _scatter(rng, b, 15 - b[OPP_BAR] - int(rng.integers(0, 3)), range(1, 25), -1)
    return _finish(b)


def _long_q_to_p(q):
    return ((q + 11) % 24) + 1                 # LN-1, the same formula both ways


def long_five_block(rng):
    """Five of the six mover points of an opponent window q..q+5 held, others near them."""
    b = [0] * 28
    q = int(rng.integers(1, 20))
    window = [_long_q_to_p(q + i) for i in range(6)]
    gap = window[int(rng.integers(0, 6))]
    left = 15
    for p in window:
        if p != gap:
            k = int(rng.integers(1, 3))
            b[p - 1] = k
            left -= k
    # feeders: up to 6 pips behind the gap on the mover's route (higher point numbers)
    feeders = [p for p in range(gap + 1, min(gap + 7, 25)) if b[p - 1] == 0]
    _scatter(rng, b, min(left, int(rng.integers(1, 4))), feeders or [24], +1)
    left = 15 - sum(x for x in b[:24] if x > 0)
    _scatter(rng, b, left, [p for p in range(7, 25) if b[p - 1] >= 0], +1)
    ahead = [_long_q_to_p(x) for x in range(1, q)]
    behind = [_long_q_to_p(x) for x in range(q + 6, 25)]
    opp = 15
    if ahead and rng.random() < 0.5:
        opp -= 1 if _scatter(rng, b, 1, ahead, -1) else 0
    elif rng.random() < 0.2:
        b[OPP_OFF] = 1
        opp -= 1
    _scatter(rng, b, opp, behind or [_long_q_to_p(24)], -1)
    if sum(-x for x in b[:24] if x < 0) + b[OPP_OFF] < 15:
        _scatter(rng, b, 15 - b[OPP_OFF] - sum(-x for x in b[:24] if x < 0), range(1, 25), -1)
    return _finish(b)


def long_head_start(rng):
    """All 15 on the head (LN-4 applies to doubles) against random opponent walls."""
    b = [0] * 28
    b[23] = 15
    _scatter(rng, b, 15 - int(rng.integers(0, 3)), range(1, 24), -1)
    return _finish(b)


def long_bear_off(rng):
    b = [0] * 28
    _scatter(rng, b, int(rng.integers(1, 16)), range(1, 7), +1)
    _scatter(rng, b, 15 - int(rng.integers(0, 4)), range(1, 25), -1)
    return _finish(b)


def long_scattered(rng):
    b = [0] * 28
    _scatter(rng, b, 15, range(1, 25), +1)
    _scatter(rng, b, 15, range(1, 25), -1)
    return _finish(b)


BIASED = {
    "short": (short_bear_off, short_bar_vs_board, short_scattered),
    "long": (long_five_block, long_head_start, long_bear_off, long_scattered),
}


def biased_positions(variant: str, n: int, seed: int):
    rng = np.random.default_rng(seed)
    out = []
    for maker in BIASED[get_variant(variant).family]:
        for _ in range(n):
            board = maker(rng)
            dice = random_dice(rng)
            out.append((board, dice, reference_afterstates(board, dice, variant)))
    return out


# --- comparison --------------------------------------------------------------------------------

def compare_with_fast(cases, variant):
    """Run the fast generator on all cases in one batch; fail on the first disagreement."""
    res = fast_generate([c[0] for c in cases], [c[1] for c in cases], variant)
    boards, offsets = np.asarray(res.boards), np.asarray(res.offsets)
    assert len(offsets) == len(cases) + 1
    bad = []
    for i, (board, dice, ref) in enumerate(cases):
        got = {tuple(int(x) for x in r) for r in boards[offsets[i]:offsets[i + 1]]}
        if got != ref:
            bad.append((board, dice, got, ref))
    if bad:
        board, dice, got, ref = bad[0]
        pytest.fail(f"{len(bad)} of {len(cases)} positions disagree; first:\n"
                    + diff_message(board, dice, variant, got, ref))


@pytest.fixture(scope="module", params=VARIANTS)
def variant(request):
    return request.param


def test_random_play_matches_reference(variant):
    """Positions of random games (all 21 rolls, both dice orders): fast == reference."""
    seed = VARIANTS.index(variant)
    cases = random_play_positions(variant, RANDOM_PLAY_POSITIONS, seed)
    rolls = {tuple(sorted(c[1])) for c in cases}
    assert rolls == ALL_ROLLS
    assert any(len(c[2]) == 1 and c[0] in c[2] for c in cases) or variant in LONG
    compare_with_fast(cases, variant)


def test_biased_positions_match_reference(variant):
    """Bear-off, bar, five-point-block, head-start and scattered positions: fast == reference."""
    seed = 100 + VARIANTS.index(variant)
    cases = biased_positions(variant, BIASED_POSITIONS, seed)
    compare_with_fast(cases, variant)


def test_biased_positions_exercise_the_rules():
    """The biased makers do reach the rare cases: bar entry, bear-off, LN-5, LN-4, BG-HH."""
    bg = biased_positions("backgammon", BIASED_POSITIONS, 7)
    assert sum(b[BAR] > 0 for b, _, _ in bg) > 100
    assert sum(any(a[OFF] > b[OFF] for a in ref) for b, _, ref in bg) > 100       # bear-offs
    assert sum(ref == {b} for b, _, ref in bg) > 20                               # no play
    cau = biased_positions("short_caucasian", BIASED_POSITIONS, 7)
    assert sum(reference_afterstates(b, d, "backgammon") != ref for b, d, ref in cau) > 5
    lg = biased_positions("long", BIASED_POSITIONS, 8)
    assert sum(b[23] == 15 and d[0] == d[1] and any(a[23] == 13 for a in ref)
               for b, d, ref in lg) > 3                                          # LN-4 used
    assert sum(reference_afterstates(b, d, "long", six_block_rule=False) != ref
               for b, d, ref in lg) > 10                                         # LN-5 bites
    assert sum(any(a[OFF] > b[OFF] for a in ref) for b, _, ref in lg) > 50


def test_notation_describes_each_afterstate():
    """POSITIONS.md: one notation per afterstate; applied to the position it gives that
    afterstate; the no-move entry has the empty play."""
    for v in VARIANTS:
        cases = random_play_positions(v, 150, 50 + VARIANTS.index(v)) + biased_positions(v, 15, 60)
        res = fast_generate([c[0] for c in cases], [c[1] for c in cases], v, notation=True)
        assert res.plays is not None and len(res.plays) == len(res.boards)
        for i, (board, dice, ref) in enumerate(cases):
            for k in range(int(res.offsets[i]), int(res.offsets[i + 1])):
                after = tuple(int(x) for x in res.boards[k])
                text = res.plays[k]
                if after == board:
                    assert text == "", (v, board, dice, text)
                else:
                    assert play(board, text) == after, (v, board, dice, text)


# --- hypothesis properties of the fast generator -----------------------------------------------

def _place(b: list[int], spots: list[int], sign: int, bar: int, off: int) -> None:
    """Puts one checker of a side on each of ``spots`` (a point, 25 = bar, 0 = off): points
    count ``sign`` (+1 mover, -1 opponent), the side's bar and off counters at ``bar``, ``off``."""
    for s in spots:
        if s == 25:
            b[bar] += 1
        elif s == 0:
            b[off] += 1
        else:
            b[s - 1] += sign


@st.composite
def positions(draw, variant: str):
    """Any position with 15 checkers a side (no bar in long nardy), mover's view."""
    long_ = get_variant(variant).is_long
    spots = list(range(1, 25)) + ([] if long_ else [25]) + [0]   # 25 = bar, 0 = off
    b = [0] * 28
    mover = draw(st.lists(st.sampled_from(spots), min_size=15, max_size=15))
    _place(b, mover, 1, BAR, OFF)
    free = [s for s in spots if s in (0, 25) or b[s - 1] == 0]
    opp = draw(st.lists(st.sampled_from(free), min_size=15, max_size=15))
    _place(b, opp, -1, OPP_BAR, OPP_OFF)
    if b[OFF] == 15 and b[OPP_OFF] == 15:
        b[0], b[OFF] = 1, 14
    return tuple(b)


dice_strategy = st.tuples(st.integers(1, 6), st.integers(1, 6))

HYP = settings(max_examples=150, deadline=None, derandomize=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _check_batch(variant, batch):
    res = fast_generate([p for p, _ in batch], [d for _, d in batch], variant)
    boards = np.asarray(res.boards)
    parent, offsets = np.asarray(res.parent), np.asarray(res.offsets)
    assert boards.shape == (len(parent), 28) and boards.dtype == np.int8
    assert len(offsets) == len(batch) + 1 and offsets[0] == 0 and offsets[-1] == len(boards)
    assert np.all(np.diff(parent) >= 0)
    for i, (board, dice) in enumerate(batch):
        assert np.all(parent[offsets[i]:offsets[i + 1]] == i)
        rows = [tuple(int(x) for x in r) for r in boards[offsets[i]:offsets[i + 1]]]
        assert rows, "every position has at least one afterstate (COM-4: itself)"
        assert len(set(rows)) == len(rows), "duplicate afterstate"
        for a in rows:
            assert sum(x for x in a[:24] if x > 0) + a[BAR] + a[OFF] == 15
            assert sum(-x for x in a[:24] if x < 0) + a[OPP_BAR] + a[OPP_OFF] == 15
            assert all(x >= 0 for x in a[24:])
        if board in rows:
            assert rows == [board], "the unchanged position only when nothing plays (COM-4)"
        ref = reference_afterstates(board, dice, variant)
        assert set(rows) <= ref, diff_message(board, dice, variant, set(rows), ref)
        assert set(rows) == ref, diff_message(board, dice, variant, set(rows), ref)


@pytest.mark.parametrize("v", VARIANTS)
def test_fast_generator_properties(v):
    """Batches of arbitrary positions: checker counts, no duplicates, COM-4, reachability."""
    @HYP
    @given(st.lists(st.tuples(positions(v), dice_strategy), min_size=1, max_size=6))
    def run(batch):
        _check_batch(v, batch)
    run()


@pytest.mark.parametrize("v", VARIANTS)
def test_fast_generator_no_move_returns_position(v):
    """COM-4: a position where nothing moves (all off but one checker against a wall, or a
    mover with no checker on the board that can move) comes back as its only afterstate."""
    if get_variant(v).is_long:
        board = tuple([0] * 11 + [-14] + [0] * 5 + [-1] + [0] * 5 + [15] + [0, 0, 0, 0])
        dice = (6, 6)                                  # 24/18 is taken by one opponent checker
    else:
        board = tuple([0] * 5 + [13] + [0] * 12 + [-2] * 6 + [2, 0, 0, 3])
        dice = (6, 5)
    res = fast_generate([board], [dice], v)
    assert [tuple(int(x) for x in r) for r in np.asarray(res.boards)] == [board]
    assert list(np.asarray(res.parent)) == [0]
