"""The gnubg agent (nardy_ai/agents/gnubg_agent.py): the message when the optional package is
missing, spec errors and the board mapping (always); real play only where gnubg is installed."""

import sys

import numpy as np
import pytest

from nardy_ai.agents import gnubg_agent, make_agent
from nardy_ai.agents.gnubg_agent import gnubg_boards
from nardy_ai.board import flip, start_board
from nardy_ai.cube import stakes_variant
from nardy_ai.errors import UnknownAgent
from nardy_ai.formats import position_id
from nardy_ai.game import play_games, summarize
from nardy_ai.movegen import generate
from nardy_ai.variants import get_variant
from movegen_helpers import hand_board

BG = get_variant("backgammon")
CUBE = stakes_variant(BG, "cube")
START_SIDE = [0, 0, 0, 0, 0, 5, 0, 3, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0]


def test_missing_package_says_how_to_install(monkeypatch):
    """Without the package a gnubg spec says how to install it; spec errors need no package
    (checked in tests/test_agents.py with the other agent families)."""
    monkeypatch.setitem(sys.modules, "gnubg", None)        # makes `import gnubg` fail
    monkeypatch.setattr(gnubg_agent, "_engine", None)
    with pytest.raises(UnknownAgent, match=r"pip install 'nardy-ai\[gnubg\]'"):
        make_agent("gnubg:0ply", "backgammon")


def test_board_mapping_sides_and_bars():
    g = gnubg_boards(start_board(BG)[None], BG)[0]
    assert g[0].tolist() == START_SIDE and g[1].tolist() == START_SIDE
    # Our afterstate: we have a checker on the bar and one on our 24; the opponent, who rolls
    # next, has one on its bar and a blot on our 3 point (its 22 point).
    b = hand_board({24: 1, 6: 13, 3: -1, 12: -13}, bar=1, opp_bar=1)
    us, them = gnubg_boards(b[None], BG)[0]
    assert us[23] == 1 and us[24] == 1 and us[5] == 13 and us.sum() == 15
    assert them[21] == 1 and them[24] == 1 and them[12] == 13 and them.sum() == 15


def test_board_mapping_matches_gnubg_position_ids():
    gnubg = pytest.importorskip("gnubg")
    rng = np.random.default_rng(0)
    boards = generate(np.repeat(start_board(BG)[None], 6, 0), rng.integers(1, 7, (6, 2)), BG).boards
    boards = np.concatenate([boards, hand_board({24: 1, 6: 13, 3: -1, 12: -13}, bar=1, opp_bar=1)[None]])
    for b, (us, them) in zip(boards, gnubg_boards(boards, BG)):
        # gnubg's ID of (not on roll, on roll) is ours of the position with the opponent on roll.
        assert gnubg.positionid((tuple(us.tolist()), tuple(them.tolist()))) == position_id(flip(b, BG), BG)


def test_plays_the_classic_opening_and_legal_games():
    pytest.importorskip("gnubg")
    agent = make_agent("gnubg:0ply", "backgammon")
    after = generate(start_board(BG)[None], np.array([[3, 1]]), BG, notation=True)
    assert after.notation(agent.choose(after, BG, np.random.default_rng(0))) == ["8/5 6/5"]
    pubeval = make_agent("pubeval", "backgammon")
    recs = play_games(BG, (agent, pubeval), 20, seed=5) + play_games(BG, (pubeval, agent), 20, seed=6)
    assert summarize(recs, agent="gnubg:0ply")["win_rate"] > 0.5


def test_deeper_plies_choose_legal_rows():
    pytest.importorskip("gnubg")
    rng = np.random.default_rng(3)
    boards = np.stack([start_board(BG), flip(hand_board({24: 1, 6: 13, 3: -1, 12: -13}, bar=1, opp_bar=1), BG),
                       hand_board({1: 2, 2: 1, 20: -2, 24: -3}, off=12, opp_off=10)])
    after = generate(boards, rng.integers(1, 7, (3, 2)), BG)
    for spec in ("gnubg:1ply", "gnubg:2ply"):
        picks = make_agent(spec, "backgammon").choose(after, BG, rng)
        assert ((picks >= after.offsets[:-1]) & (picks < after.offsets[1:])).all()


def test_our_search_over_gnubg_0ply_equals_gnubg_1ply_and_2ply():
    """An independent check of nardy_ai.search and of the board mapping: expectimax over
    gnubg's own 0-ply evaluation reproduces gnubg's 1- and 2-ply evaluations."""
    gnubg = pytest.importorskip("gnubg")
    from nardy_ai.model import flip_outcomes
    from nardy_ai.search import afterstate_values

    gnubg_agent.load_gnubg()
    cube = gnubg.cubeinfo(1, -1, 1, 0, (0, 0), 0)

    def probabilities(boards, plies=0):
        ctx = gnubg.evalcontext(0, plies, 1, 0, 0.0)
        on_roll = [gnubg.evaluate((tuple(us), tuple(them)), cube, ctx)[:5]
                   for us, them in gnubg_boards(boards, BG).tolist()]
        return flip_outcomes(np.array(on_roll, float), BG)        # for the side that just moved

    ev = gnubg_agent.GnubgEvaluator(BG, 0)
    after = generate(start_board(BG)[None], np.array([[3, 1]]), BG).boards
    assert ev.probabilities(after[:3]) == pytest.approx(probabilities(after[:3]), abs=1e-6)
    assert afterstate_values(after[:3], ev, 1) == pytest.approx(probabilities(after[:3], 1), abs=1e-6)
    assert afterstate_values(after[:1], ev, 2) == pytest.approx(probabilities(after[:1], 2), abs=1e-6)


# --- cube decisions through gnubg (CUBE-1, money play) ------------------------------------------

def _race_lead():
    """We are on roll at 57 pips against 81, no contact: a clear double and pass."""
    return hand_board({1: 2, 2: 2, 3: 2, 4: 3, 5: 3, 6: 3, 22: -2, 21: -3, 20: -3, 19: -3, 18: -2, 17: -2})


def test_xgid_of_the_start_and_cube_fields():
    from nardy_ai.agents.gnubg_agent import xgid
    assert xgid(start_board(BG), 0, 0, False, False) == "XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:0:0:20"
    # Opponent's bar first (lowercase), ours last; cube 4 owned by O; Jacoby + beaver = 3.
    b = hand_board({24: 1, 6: 13, 3: -1, 12: -13}, bar=1, opp_bar=1)
    assert xgid(b, 2, -1, True, True) == "XGID=a--a--M-----m-----------AA:2:-1:1:00:0:0:3:0:20"


def test_xgid_sets_the_position_gnubg_evaluates():
    pytest.importorskip("gnubg")
    from nardy_ai.agents.gnubg_agent import _captured, xgid
    g = gnubg_agent.load_gnubg()
    rng = np.random.default_rng(1)
    boards = generate(np.repeat(start_board(BG)[None], 5, 0), rng.integers(1, 7, (5, 2)), BG).boards[::7]
    boards = np.concatenate([boards, hand_board({24: 1, 6: 13, 3: -1, 12: -13}, bar=1, opp_bar=1)[None]])
    for b in boards:
        _captured(g, "set gnubgid " + xgid(flip(b, BG), 1, -1, False, False))   # the opponent on roll
        assert np.array(g.board()).tolist() == gnubg_boards(b[None], BG)[0].tolist()


def test_gnubg_doubles_and_passes_far_ahead_in_a_race():
    pytest.importorskip("gnubg")
    agent = make_agent("gnubg:0ply", CUBE)
    b = _race_lead()
    dec, eq = agent.double(b[None], [{"value": 1, "owner": "centre"}], CUBE)
    assert dec.tolist() == [True] and eq[0]["double_take"] > eq[0]["double_pass"] > eq[0]["no_double"]
    take, _ = agent.take(flip(b, CUBE)[None], [{"value": 1, "owner": "centre"}], CUBE)
    assert take.tolist() == [False]
    # Owning the cube at 2 changes nothing; a cube the opponent owns cannot be doubled.
    assert agent.double(b[None], [{"value": 2, "owner": "mover", "turned": True}], CUBE)[0].tolist() == [True]
    assert agent.double(b[None], [{"value": 2, "owner": "opponent", "turned": True}], CUBE)[0].tolist() == [False]


def test_gnubg_no_double_at_the_opening_and_takes_it():
    pytest.importorskip("gnubg")
    for spec in ("gnubg:0ply", "gnubg:1ply"):
        agent = make_agent(spec, CUBE)
        s = start_board(CUBE)[None]
        dec, eq = agent.double(s, [{"value": 1, "owner": "centre"}], CUBE)
        assert dec.tolist() == [False] and eq[0]["no_double"] > eq[0]["double_take"]
        assert agent.take(s, [{"value": 1, "owner": "centre"}], CUBE)[0].tolist() == [True]
        assert agent.beaver(s, [{"value": 1, "owner": "centre"}], CUBE)[0].tolist() == [True]
    # With BG-B and BG-J on (gnubg then says "No double, beaver"): the same answers.
    from nardy_ai.variants import with_options
    vb = with_options(CUBE, beaver=True, jacoby=True)
    agent = make_agent("gnubg:0ply", vb)
    s = start_board(vb)[None]
    assert agent.double(s, [{"value": 1, "owner": "centre"}], vb)[0].tolist() == [False]
    assert agent.beaver(s, [{"value": 1, "owner": "centre"}], vb)[0].tolist() == [True]
    # The doubler answering a beaver (on roll, cube at 4 owned by the beaverer) takes here.
    assert agent.take(s, [{"value": 4, "owner": "opponent", "on_roll": True, "turned": True}],
                      vb)[0].tolist() == [True]


def test_gnubg_dave_never_offers_and_always_accepts():
    pytest.importorskip("gnubg")
    v = stakes_variant(BG, "dave-geometric")
    agent = make_agent("gnubg:0ply", BG)
    b = _race_lead()[None]
    assert agent.double(b, [{"value": 1, "owner": "centre"}], v)[0].tolist() == [False]
    assert agent.take(b, [{"value": 1, "owner": "centre"}], v)[0].tolist() == [True]


def test_cube_games_gnubg_against_heuristic_balance():
    pytest.importorskip("gnubg")
    agent, heur = make_agent("gnubg:0ply", "backgammon"), make_agent("heuristic", "backgammon")
    recs = play_games(BG, (agent, heur), 4, seed=11, stakes="cube") + \
        play_games(BG, (heur, agent), 4, seed=12, stakes="cube")
    assert all(r.stakes == "cube" for r in recs)
    assert any(r.cube for r in recs)                      # raises were offered and answered
    a = summarize(recs, agent="gnubg:0ply")["points_per_game"]
    b = summarize(recs, agent="heuristic")["points_per_game"]
    assert a == pytest.approx(-b)
    for r in recs:
        assert r.points == (r.stake if r.passed else r.stake * BG.scoring[r.level - 1])
