"""Reading play notation (notation.py) and the canonical notation the generator writes."""

import numpy as np
import pytest

from nardy_ai.bench.positions import random_positions
from nardy_ai.board import start_board
from nardy_ai.errors import FormatError, IllegalPlay
from nardy_ai.movegen import generate
from nardy_ai.notation import find_play, parse_play

START = start_board("backgammon")


def test_parse_forms():
    assert parse_play("13/7 8/7") == [(13, 7), (8, 7)]
    assert parse_play("bar/22* 6/off") == [(25, 22), (6, 0)]
    assert parse_play("24/18/13") == [(24, 18), (18, 13)]
    assert parse_play("8/5(2)") == [(8, 5), (8, 5)]
    assert parse_play("") == []
    for bad in ("13-7", "7/13", "26/20", "bar/off/3", "13/7(x)"):
        with pytest.raises(FormatError):
            parse_play(bad)


@pytest.mark.parametrize("text", ["13/2", "13/8/2", "8/2 13/8", "13/7/2", "13/8 8/2"])
def test_same_play_written_in_different_forms(text):
    """One afterstate, one canonical notation, whatever the form the user wrote."""
    after, canonical = find_play(START, (6, 5), text, "backgammon")
    assert canonical == "13/2"
    assert after[12] == 4 and after[1] == 1


def test_illegal_plays_name_the_rule():
    with pytest.raises(IllegalPlay, match="COM-1"):
        find_play(START, (6, 5), "24/18", "backgammon")            # half the roll
    with pytest.raises(IllegalPlay, match="not one of the legal plays"):
        find_play(START, (6, 5), "6/1 13/7", "backgammon")         # 6/1 lands on 2 opponents (BG-2)
    with pytest.raises(IllegalPlay, match="no checker"):
        find_play(START, (6, 5), "20/14 13/8", "backgammon")
    with pytest.raises(IllegalPlay):
        find_play(start_board("long"), (6, 5), "24/18 24/19", "long")   # LN-3 head rule


@pytest.mark.parametrize("variant", ["backgammon", "short_caucasian", "long"])
def test_every_generated_notation_reads_back_to_its_afterstate(variant):
    """The notation written for each afterstate names exactly that afterstate."""
    boards = random_positions(variant, n_games=8, plies=30, seed=11)
    rng = np.random.default_rng(0)
    dice = rng.integers(1, 7, (len(boards), 2))
    res = generate(boards, dice, variant, notation=True)
    for i in range(0, len(boards), 7):
        for r in range(res.offsets[i], res.offsets[i + 1]):
            after, canonical = find_play(boards[i], tuple(dice[i]), res.plays[r], variant)
            assert (after == res.boards[r]).all() and canonical == res.plays[r]
