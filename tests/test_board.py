"""Board layout, flipping, pip counts, validation and the JSON position format (board.py)."""

import json

import numpy as np
import pytest

from nardy_ai.bench.positions import random_positions
from nardy_ai.board import (BAR, OFF, OPP_BAR, OPP_OFF, board_from_json, board_to_json, both_sides_points,
                            flip, pip_counts, start_board, validate, validate_dice)
from nardy_ai.errors import FormatError, InvalidDice, InvalidPosition, UnknownVariant


@pytest.mark.parametrize("variant", ["backgammon", "long"])
def test_flip_is_an_involution_and_swaps_sides(variant):
    boards = random_positions(variant, n_games=16, plies=40, seed=1)
    back = flip(flip(boards, variant), variant)
    assert (back == boards).all()
    f = flip(boards, variant)
    assert (f[:, BAR] == boards[:, OPP_BAR]).all() and (f[:, OFF] == boards[:, OPP_OFF]).all()
    assert (pip_counts(f, variant) == pip_counts(boards, variant)[:, ::-1]).all()


@pytest.mark.parametrize("variant", ["backgammon", "long"])
def test_both_sides_points_stacks_the_mover_view_over_the_opponent_view(variant):
    boards = random_positions(variant, n_games=16, plies=40, seed=2)
    both = both_sides_points(boards, variant)
    assert both.dtype == np.int8 and both.shape == (2 * len(boards), 24)
    assert (both[:len(boards)] == boards[:, :24]).all()
    assert (both[len(boards):] == flip(boards, variant)[:, :24]).all()


def test_flip_maps_points_per_family():
    """BG-1: the opponent's point q is the mover's 25 - q; LN-1: ((q + 11) mod 24) + 1."""
    b = np.zeros(28, np.int8)
    b[0] = -1       # opponent checker on the mover's point 1
    b[OPP_OFF] = 14
    b[23] = 1
    b[OFF] = 14
    short = flip(b, "backgammon")
    assert short[23] == 1 and short[0] == -1            # its point 24 / our 1
    long_ = flip(b, "long")
    assert long_[12] == 1                                # mover point 1 is opponent point 13
    assert long_[11] == -1                               # mover point 24 is opponent point 12


def test_pip_counts_of_the_starts():
    assert pip_counts(start_board("backgammon"), "backgammon").tolist() == [167, 167]
    assert pip_counts(start_board("long"), "long").tolist() == [360, 360]


def test_validation_names_the_field():
    b = start_board("backgammon")
    validate(b, "backgammon")
    bad = b.copy()
    bad[5] = 4
    with pytest.raises(InvalidPosition, match="mover has 14 checkers"):
        validate(bad, "backgammon")
    bad = b.copy()
    bad[0] = -3
    with pytest.raises(InvalidPosition, match="opponent has 16"):
        validate(bad, "backgammon")
    bad = b.copy()
    bad[5] = 16
    with pytest.raises(InvalidPosition, match=r"points\[5\]"):
        validate(bad, "backgammon")
    lb = start_board("long")
    lb[23] = 14
    lb[BAR] = 1
    with pytest.raises(InvalidPosition, match="LN-2"):
        validate(lb, "long")


def test_json_round_trip_and_errors():
    b = start_board("backgammon")
    obj = board_to_json(b, "backgammon", dice=[3, 1])
    v, b2, dice, cube = board_from_json(json.dumps(obj))
    assert v.id == "backgammon" and (b2 == b).all() and dice == (3, 1) and cube is None
    _, _, _, cube = board_from_json(dict(obj, cube={"value": 2, "owner": "mover"}))
    assert cube == {"value": 2, "owner": "mover"}
    with pytest.raises(FormatError, match="malformed JSON"):
        board_from_json("{points:")
    with pytest.raises(InvalidPosition, match="missing field 'points'"):
        board_from_json({"variant": "backgammon"})
    with pytest.raises(InvalidPosition, match="list of 24"):
        board_from_json({"variant": "backgammon", "points": [0] * 23})
    with pytest.raises(UnknownVariant):
        board_from_json(dict(obj, variant="checkers"))
    with pytest.raises(InvalidDice, match=r"dice\[1\]"):
        board_from_json(dict(obj, dice=[3, 0]))
    with pytest.raises(InvalidDice):
        board_from_json(dict(obj, dice=[3]))
    with pytest.raises(InvalidPosition, match="cube.owner"):
        board_from_json(dict(obj, cube={"value": 2, "owner": "me"}))


def test_dice_validation():
    assert validate_dice([6, 1]) == (6, 1)
    for bad in ([7, 1], [1.5, 2], [True, 2], "61", [1, 2, 3]):
        with pytest.raises(InvalidDice):
            validate_dice(bad)


def test_distinct_boards_keeps_each_row_once_in_order_of_first_appearance(monkeypatch):
    """distinct_boards: unique[inverse] rebuilds the batch, each distinct row once, first
    appearance first; with every hash equal (a forced collision) the exact comparison is
    used and gives the same answer."""
    import nardy_ai.board as board_mod
    from nardy_ai.bench.positions import random_positions
    rows = random_positions("long", n_games=6, plies=40, seed=5)
    picks = np.random.default_rng(5).integers(0, 50, 400)
    batch = rows[picks]
    unique, inverse = board_mod.distinct_boards(batch)
    assert np.array_equal(unique[inverse], batch)
    first = {}
    for i, r in enumerate(batch):
        first.setdefault(r.tobytes(), i)
    assert np.array_equal(unique, batch[sorted(first.values())])
    monkeypatch.setattr(board_mod, "_HASH_MULTIPLIERS", np.zeros(7, np.uint64))
    u2, inv2 = board_mod.distinct_boards(batch)
    assert np.array_equal(u2, unique) and np.array_equal(inv2, inverse)
    one, inv1 = board_mod.distinct_boards(batch[:1])
    assert np.array_equal(one, batch[:1]) and inv1.tolist() == [0]
