"""The move generator's one-position path (plain Python over bit masks, what ``generate`` runs
for a batch of one) against the slow reference and against the batched array path: the same
afterstates, in the same order (the order of an environment's actions), with the same step
counts and play notation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from nardy_ai.board import start_board
from nardy_ai.movegen import generate, generate_batched
from reference_movegen import reference_afterstates
from test_movegen_vs_reference import (HYP, VARIANTS, biased_positions, dice_strategy, diff_message, positions,
                                       random_play_positions)


def _same_as_batched(board, dice, variant) -> None:
    """One position: the one-position path equals the reference's set and the batched path's
    rows, order, steps, notation and what :meth:`Afterstates.select` keeps."""
    b = np.asarray(board, np.int8).reshape(1, 28)
    d = np.asarray(dice, np.int64).reshape(1, 2)
    one = generate(b, d, variant, notation=True)
    arr = generate_batched(b, d, variant, notation=True)
    rows = [tuple(int(x) for x in r) for r in one.boards]
    ref = reference_afterstates(tuple(int(x) for x in b[0]), tuple(int(x) for x in d[0]), variant)
    assert set(rows) == ref and len(rows) == len(ref), diff_message(tuple(b[0]), tuple(d[0]), variant, set(rows), ref)
    assert np.array_equal(one.boards, arr.boards), (variant, rows, dice)
    assert one.boards.dtype == np.int8 and one.boards.shape == (len(rows), 28)
    assert np.array_equal(one.offsets, arr.offsets) and np.array_equal(one.parent, arr.parent)
    assert np.array_equal(one.steps, arr.steps) and one.plays == arr.plays
    lazy = generate(b, d, variant)                       # notation worked out later, from the trace
    assert lazy.plays is None and lazy.notation(np.arange(len(rows))[::-1]) == arr.plays[::-1]
    sub, picked = lazy.select([0])
    assert np.array_equal(sub.boards, arr.boards) and sub.notation(np.arange(len(rows))) == arr.plays
    assert picked.tolist() == list(range(len(rows)))


@pytest.mark.parametrize("variant", VARIANTS)
def test_one_position_matches_the_batched_path_and_the_reference(variant):
    """Positions of random games, the start position with every roll, and the biased makers
    (bar, bear-off, LN-4 head starts, LN-5 blocks): identical results one position at a time."""
    seed = 300 + VARIANTS.index(variant)
    cases = random_play_positions(variant, 300, seed) + biased_positions(variant, 40, seed)
    cases += [(tuple(int(x) for x in start_board(variant)), (a, c), None) for a in range(1, 7) for c in range(1, 7)]
    for board, dice, _ in cases:
        _same_as_batched(board, dice, variant)


@pytest.mark.parametrize("variant", VARIANTS)
def test_one_position_properties(variant):
    """Arbitrary positions (15 checkers a side), one at a time: as the batched path."""
    @HYP
    @given(positions(variant), dice_strategy)
    def run(board, dice):
        _same_as_batched(board, dice, variant)
    run()
