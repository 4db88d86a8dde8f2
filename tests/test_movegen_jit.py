"""The compiled move generator (:mod:`nardy_ai.movegen_jit`, numba) against the NumPy array
path: for every variant without BG-HH, the same afterstates in the same order per position,
the same step counts, offsets and parents, the same play notation (built at once and later
from the trace, also after :meth:`Afterstates.select`).  Skipped when numba is not installed
(it is an optional extra, ``pip install 'nardy-ai[fast]'``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("numba", reason="numba is not installed (optional extra 'fast'): the compiled "
                                    "move generator is not used, nothing to compare")

from nardy_ai import movegen, movegen_jit                                  # noqa: E402
from nardy_ai.board import start_board                                     # noqa: E402
from nardy_ai.movegen import generate, generate_batched                    # noqa: E402
from nardy_ai.variants import get_variant                                  # noqa: E402
from test_movegen_vs_reference import (HYP, VARIANTS, biased_positions, dice_strategy,  # noqa: E402
                                       positions, random_play_positions)

#: The variants the compiled generator plays (BG-HH stays on the NumPy path).
JIT_VARIANTS = tuple(v for v in VARIANTS if not get_variant(v).no_hit_and_hide)


@pytest.fixture
def jit_calls(monkeypatch):
    """Counts the compiled generator's calls made by :func:`generate` (and makes sure it is on)."""
    monkeypatch.delenv("NARDY_NO_JIT", raising=False)
    monkeypatch.setattr(movegen, "_JIT", None)          # read the switch afresh
    calls = []
    real = movegen_jit.generate_arrays

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append(out is not None)
        return out
    monkeypatch.setattr(movegen_jit, "generate_arrays", spy)
    return calls


def _same_as_numpy(boards, dice, variant, calls=None) -> None:
    """A batch: :func:`generate` (compiled) equals :func:`generate_batched` row for row."""
    b = np.asarray(boards, np.int8).reshape(-1, 28)
    d = np.asarray(dice, np.int64).reshape(-1, 2)
    before = None if calls is None else len(calls)
    fast = generate(b, d, variant, notation=True)
    if calls is not None and len(b) > 1:
        assert len(calls) == before + 1 and calls[-1], "the compiled generator did not answer"
    ref = generate_batched(b, d, variant, notation=True)
    assert fast.boards.dtype == np.int8 and fast.boards.shape == ref.boards.shape, (variant, fast.boards.shape)
    for i in range(len(b)):
        a, c = fast.offsets[i:i + 2], ref.offsets[i:i + 2]
        assert np.array_equal(a, c) and np.array_equal(fast.boards[a[0]:a[1]], ref.boards[c[0]:c[1]]), \
            (variant, tuple(int(x) for x in b[i]), tuple(int(x) for x in d[i]))
    assert np.array_equal(fast.offsets, ref.offsets) and np.array_equal(fast.parent, ref.parent)
    assert np.array_equal(fast.steps, ref.steps) and fast.steps.dtype == ref.steps.dtype
    assert fast.plays == ref.plays
    lazy = generate(b, d, variant)                      # notation later, from the trace, any order
    rows = np.arange(len(ref.boards))[::-1]
    assert lazy.plays is None and lazy.notation(rows) == [ref.plays[r] for r in rows]
    pick = np.arange(len(b))[::-2]
    sub, picked = lazy.select(pick)
    ref_sub, ref_picked = ref.select(pick)
    assert np.array_equal(picked, ref_picked) and np.array_equal(sub.boards, ref_sub.boards)
    assert sub.notation(np.arange(len(sub.boards))) == ref_sub.notation(np.arange(len(ref_sub.boards)))


@pytest.mark.parametrize("variant", JIT_VARIANTS)
def test_compiled_matches_numpy_on_random_play(variant, jit_calls):
    """Positions of random games (every roll, doubles, bar entries, bear-offs, no-move
    positions) in one batch, and in small batches: identical output."""
    cases = random_play_positions(variant, 400, 500 + VARIANTS.index(variant))
    boards, dice = [c[0] for c in cases], [c[1] for c in cases]
    assert any(a == b for a, b in dice)
    _same_as_numpy(boards, dice, variant, jit_calls)
    for i in range(0, 60, 3):
        _same_as_numpy(boards[i:i + 3], dice[i:i + 3], variant, jit_calls)


@pytest.mark.parametrize("variant", JIT_VARIANTS)
def test_compiled_matches_numpy_on_biased_positions(variant, jit_calls):
    """Bear-offs, checkers on the bar against (nearly) closed boards, LN-5 five-blocks, LN-4
    head starts, scattered positions, and the start position with every roll."""
    cases = biased_positions(variant, 40, 600 + VARIANTS.index(variant))
    cases += [(tuple(int(x) for x in start_board(variant)), (a, c), None) for a in range(1, 7) for c in range(1, 7)]
    _same_as_numpy([c[0] for c in cases], [c[1] for c in cases], variant, jit_calls)


@pytest.mark.parametrize("variant", JIT_VARIANTS)
def test_compiled_matches_numpy_properties(variant, jit_calls):
    """Batches of arbitrary positions (15 checkers a side), repeats included."""
    @settings(HYP, max_examples=60)
    @given(st.lists(st.tuples(positions(variant), dice_strategy), min_size=2, max_size=8))
    def run(batch):
        _same_as_numpy([p for p, _ in batch] * 2, [d for _, d in batch] * 2, variant, jit_calls)
    run()


def test_compiled_blocked_and_no_move_positions(jit_calls):
    """COM-4 (nothing moves: the position itself), COM-2 (only the larger die plays) and a
    checker on the bar that cannot enter, in batches with ordinary positions."""
    wall = tuple([0] * 5 + [13] + [0] * 12 + [-2] * 6 + [2, 0, 0, 3])           # bar vs closed board
    bar_open = tuple([0] * 5 + [13] + [0] * 12 + [-2] * 5 + [0] + [2, 0, 0, 3])
    head = tuple([0] * 11 + [-14] + [0] * 5 + [-1] + [0] * 5 + [15] + [0, 0, 0, 0])
    start = tuple(int(x) for x in start_board("backgammon"))
    _same_as_numpy([wall, bar_open, start, wall], [(6, 5), (6, 1), (3, 1), (2, 2)], "backgammon", jit_calls)
    res = generate(np.array([wall, start], np.int8), np.array([(6, 5), (6, 5)]), "backgammon")
    assert res.counts()[0] == 1 and res.steps[0] == 0 and np.array_equal(res.boards[0], wall)
    long_start = tuple(int(x) for x in start_board("long"))
    _same_as_numpy([head, long_start, long_start], [(6, 6), (6, 6), (4, 4)], "long", jit_calls)


def test_work_arrays_grow(jit_calls):
    """Tiny first work arrays: the kernel asks for more until the batch fits; same answer."""
    cases = random_play_positions("long", 200, 9)
    boards = np.array([c[0] for c in cases], np.int8)
    dice = np.array([c[1] for c in cases])
    small = movegen_jit.generate_arrays(boards, dice, True, capacity=(4, 8, 8))
    big = movegen_jit.generate_arrays(boards, dice, True)
    ref = generate_batched(boards, dice, "long")
    for got in (small, big):
        assert np.array_equal(got[0], ref.boards) and np.array_equal(got[1], ref.offsets)
        assert np.array_equal(got[2] >> 32, ref.steps)


def test_switch_and_bg_hh_stay_on_numpy(jit_calls, monkeypatch):
    """BG-HH (short_caucasian) never reaches the compiled generator; ``NARDY_NO_JIT`` turns it
    off (then :func:`generate` is the NumPy path)."""
    cases = random_play_positions("short_caucasian", 40, 3)
    generate(np.array([c[0] for c in cases], np.int8), np.array([c[1] for c in cases]), "short_caucasian")
    assert jit_calls == []
    monkeypatch.setenv("NARDY_NO_JIT", "1")
    assert not movegen_jit.enabled()
    monkeypatch.setattr(movegen, "_JIT", None)
    cases = random_play_positions("backgammon", 40, 3)
    generate(np.array([c[0] for c in cases], np.int8), np.array([c[1] for c in cases]), "backgammon")
    assert jit_calls == []
    monkeypatch.delenv("NARDY_NO_JIT")
    assert movegen_jit.enabled()
