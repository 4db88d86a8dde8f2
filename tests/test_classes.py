"""Position classes (nardy_ai/classes.py): hand-built positions of every class per family,
symmetry under flip, and agreement with a plain per-position reading of the definitions."""

from __future__ import annotations

import numpy as np
import pytest

from movegen_helpers import pos
from nardy_ai.bench.positions import random_positions
from nardy_ai.board import flip, start_board
from nardy_ai.classes import class_names, position_classes


def _cls(board, variant="backgammon") -> str:
    b = np.array([board], np.int8)
    return class_names(variant)[int(position_classes(b, variant)[0])]


@pytest.mark.parametrize("variant", ["backgammon", "long"])
def test_start_is_contact(variant):
    assert _cls(start_board(variant), variant) == "contact"


@pytest.mark.parametrize("variant, mover, opp, expected", [
    # BG-3: no hit possible once every checker is past the other side's.
    pytest.param("backgammon", {8: 5, 3: 10}, {17: 5, 22: 10}, "race", id="short race"),
    pytest.param("backgammon", {1: 5, 6: 10}, {19: 5, 24: 10}, "bearoff", id="short bearoff"),
    # The opponent has 6 checkers in play (9 off) and still a back checker on the mover's
    # 2-point: contact with t <= 6 -> crashed.
    pytest.param("backgammon", {13: 5, 8: 5, 6: 5}, {2: 1, 20: 5}, "crashed", id="short crashed opponent"),
    # Mover: 10 checkers with 4 buried on its 1-point (t = 10 <= 6 + n1 = 10) -> crashed.
    pytest.param("backgammon", {1: 4, 3: 2, 4: 2, 20: 2}, {10: 5, 12: 5, 23: 5}, "crashed",
                 id="short crashed buried on 1"),
    # n1 = 2 and n2 = 3: t + 1 - n1 - n2 = 12 + 1 - 5 = 8 > 6, t = 12 > 8 -> not crashed.
    pytest.param("backgammon", {1: 2, 2: 3, 5: 4, 20: 3}, {10: 5, 12: 5, 23: 5}, "contact",
                 id="short not crashed"),
    # n1 <= 1: crashed when t <= 6 + n2 - 1; n2 = 3, t = 8 -> crashed.
    pytest.param("backgammon", {2: 3, 4: 2, 6: 1, 20: 2}, {10: 5, 12: 5, 23: 5}, "crashed",
                 id="short crashed buried on 2"),
    # Mover home and ahead; the opponent's checkers on the mover's 13-18 (its own home).
    pytest.param("long", {1: 5, 6: 10}, {13: 5, 18: 10}, "bearoff", id="long bearoff"),
    # Race: mover on 7-9 (opponent points 19-21: behind the opponent? no, ahead) -> the
    # opponent's checkers on its 1-6 are past every mover checker and vice versa.
    pytest.param("long", {7: 5, 3: 10}, {13: 5, 17: 10}, "race", id="long race"),
    # An opponent checker on the mover's 5-point lies ahead of the mover's checkers on 7.
    pytest.param("long", {7: 5, 3: 10}, {5: 1, 17: 14}, "contact", id="long contact"),
    # A mover checker on the mover's 20 = opponent's point 8, ahead of the opponent's
    # checkers on its own points 9-12 (mover 21-24): contact for the opponent's route.
    pytest.param("long", {20: 1, 3: 14}, {22: 5, 15: 10}, "contact", id="long contact on the opponents route"),
])
def test_hand_built_positions_of_each_class(variant, mover, opp, expected):
    assert _cls(pos(mover, opp), variant) == expected


def test_short_contact_touching_is_not_race():
    # One opponent checker still on the mover's 5-point: contact (and crashed: see above).
    touching = pos({8: 5, 3: 10}, {5: 1, 22: 14})
    assert _cls(touching) != "race"


def test_short_bar_checker_means_contact():
    b = pos({1: 14}, {19: 15}, bar=(1, 0))
    assert _cls(b) != "race" and _cls(b) != "bearoff"


@pytest.mark.parametrize("variant", ["backgammon", "long"])
def test_classes_symmetric_under_flip(variant):
    boards = random_positions(variant, n_games=64, plies=150, seed=3)
    assert np.array_equal(position_classes(boards, variant),
                          position_classes(flip(boards, variant), variant))
    seen = set(position_classes(boards, variant).tolist())
    # Random play meets every class of the family.
    assert seen == set(range(len(class_names(variant))))


def _slow_class(b, variant) -> str:
    """A plain per-position reading of the definitions in classes.py's docstring."""
    long = variant == "long"
    mover = [p for p in range(1, 25) if b[p - 1] > 0]
    opp = [p for p in range(1, 25) if b[p - 1] < 0]
    opp_home = range(13, 19) if long else range(19, 25)
    if b[24] == 0 and b[25] == 0 and all(p <= 6 for p in mover) and all(p in opp_home for p in opp):
        return "bearoff"
    if long:
        def opp_num(p):
            return (p + 11) % 24 + 1
        contact = any(r < p for p in mover for r in opp) or \
            any(opp_num(m) < opp_num(r) for m in mover for r in opp)
        return "contact" if contact else "race"
    back = 25 if b[24] else max(mover, default=0)
    opp_back = 0 if b[25] else min(opp, default=25)
    if back < opp_back:
        return "race"

    def crashed(points_own, t):
        n1, n2 = points_own.get(1, 0), points_own.get(2, 0)
        if t <= 6:
            return True
        if n1 > 1:
            return t <= 6 + n1 or (n2 > 1 and 1 + t - (n1 + n2) <= 6)
        return t <= 6 + (n2 - 1)
    mine = {p: int(b[p - 1]) for p in mover}
    theirs = {25 - p: int(-b[p - 1]) for p in opp}
    if crashed(mine, 15 - int(b[26])) or crashed(theirs, 15 - int(b[27])):
        return "crashed"
    return "contact"


@pytest.mark.parametrize("variant", ["backgammon", "long"])
def test_classes_match_plain_reading(variant):
    boards = random_positions(variant, n_games=32, plies=200, seed=7)[::5]
    fast = position_classes(boards, variant)
    names = class_names(variant)
    for b, c in zip(boards, fast):
        assert names[c] == _slow_class(b, variant)
