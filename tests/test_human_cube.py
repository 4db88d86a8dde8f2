"""The human agent's cube and dave questions (CUBE-1, CUBE-D), driven by a fake terminal."""

import io

import numpy as np
import pytest

from nardy_ai.agents import HumanAgent
from nardy_ai.board import flip, start_board
from nardy_ai.cube import stakes_variant
from nardy_ai.errors import NardyError
from nardy_ai.game import play_games
from agent_helpers import CubeScript

CUBE = stakes_variant("backgammon", "cube")


def test_double_asks_yes_no_showing_board_and_stakes():
    out = io.StringIO()
    human = HumanAgent(io.StringIO("maybe\n\nY\nno\n"), out)
    boards = np.stack([start_board(CUBE)] * 2)
    cubes = [{"value": 1, "owner": "centre", "next": 2}, {"value": 2, "owner": "mover", "next": 4}]
    dec, eq = human.double(boards, cubes, CUBE)
    assert dec.tolist() == [True, False] and eq is None
    text = out.getvalue()
    assert "Double from 1 to 2? (y/n)" in text and "Double from 2 to 4? (y/n)" in text
    assert "answer y or n" in text and text.count("X (you, on roll)") == 2
    assert "Pip" in text or "pip" in text                    # the board is drawn


def test_take_pass_and_beaver_questions():
    out = io.StringIO()
    human = HumanAgent(io.StringIO("yes\nn\ny\n"), out)
    b = flip(start_board(CUBE)[None], CUBE)
    dec, _ = human.take(np.concatenate([b, b]), [{"value": 2, "owner": "opponent", "next": 4},
                                                 {"value": 1, "owner": "centre"}], CUBE)
    assert dec.tolist() == [True, False]
    assert "Take at 4 (pass loses 2)? (y/n)" in out.getvalue()
    assert "Take at 2 (pass loses 1)? (y/n)" in out.getvalue()
    assert "O (on roll, doubles)" in out.getvalue()
    assert human.beaver(b, [{"value": 1, "owner": "centre", "next": 2}], CUBE)[0].tolist() == [True]
    assert "Beaver (redouble to 4" in out.getvalue()


def test_dave_offer_wording_and_end_of_input():
    v = stakes_variant("backgammon", "dave-arithmetic")
    out = io.StringIO()
    human = HumanAgent(io.StringIO("n\n"), out)
    assert human.double(start_board(v)[None], [{"value": 3, "owner": "mover"}], v)[0].tolist() == [False]
    assert "Offer a raise from 3 to 4? (y/n)" in out.getvalue()
    with pytest.raises(NardyError, match="end of input while waiting for a cube answer"):
        HumanAgent(io.StringIO(""), io.StringIO()).take(start_board(v)[None], [{"value": 1}], v)


def test_a_human_pass_ends_a_cube_game():
    """Through the game runner: whoever starts, the input answers 'n' to the human's own double
    question (if it is on roll first), plays by number, then passes the raise."""
    doubler = CubeScript("doubler", "random", "backgammon", doubles=True)
    for seed in range(20):
        out = io.StringIO()
        human = HumanAgent(io.StringIO("n\n1\nn\n" * 3), out)
        try:
            recs = play_games("backgammon", (doubler, human), 1, seed=seed, stakes="cube")
        except NardyError:
            continue
        r = recs[0]
        if r.passed:
            assert r.winner == 0 and r.points == r.stake == 1
            assert [a[2] for a in r.cube] == ["double", "pass"]
            assert "Take at 2 (pass loses 1)? (y/n)" in out.getvalue()
            return
    pytest.fail("no seed gave a game the human passed")
