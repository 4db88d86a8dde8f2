"""Pubeval (nardy_ai/pubeval.py, nardy_ai/agents/pubeval.py): the published weights, the input
encoding against a plain transcription of Tesauro's formula, the race flag, play (BG-1 start,
COM-6 end), and pubeval as an evaluator."""

import dataclasses

import numpy as np
import pytest

from nardy_ai.agents import RandomAgent, make_agent
from nardy_ai.agents.pubeval import PubevalAgent
from nardy_ai.pubeval import BORNE_OFF_SCORE, CONTACT_WEIGHTS, RACE_WEIGHTS, is_race, pubeval_scores
from nardy_ai.bench.positions import random_positions
from nardy_ai.board import BAR, OFF, OPP_BAR, OPP_OFF, start_board
from nardy_ai.game import play_games, summarize
from nardy_ai.movegen import generate
from nardy_ai.variants import get_variant
from movegen_helpers import hand_board

BG = get_variant("backgammon")


def original_pubeval(race: bool, board: np.ndarray) -> float:
    """Tesauro's pubeval() and setx(), transcribed loop by loop on his pos[0..27] array."""
    pos = [0] * 28
    for p in range(1, 25):
        pos[p] = int(board[p - 1])                 # points 1-24, the mover's checkers positive
    pos[25] = int(board[BAR])                      # the mover's bar (setx does not read it)
    pos[0] = -int(board[OPP_BAR])                  # the opponent's bar, negative
    pos[26] = int(board[OFF])
    pos[27] = -int(board[OPP_OFF])
    if pos[26] == 15:
        return 99999999.0
    x = [0.0] * 122
    for j in range(1, 25):
        jm1 = j - 1
        n = pos[25 - j]
        if n != 0:
            if n == -1:
                x[5 * jm1 + 0] = 1.0
            if n == 1:
                x[5 * jm1 + 1] = 1.0
            if n >= 2:
                x[5 * jm1 + 2] = 1.0
            if n == 3:
                x[5 * jm1 + 3] = 1.0
            if n >= 4:
                x[5 * jm1 + 4] = (n - 3) / 2.0
    x[120] = -pos[0] / 2.0
    x[121] = pos[26] / 15.0
    w = RACE_WEIGHTS if race else CONTACT_WEIGHTS
    return float(sum(w[i] * x[i] for i in range(122)))


HAND = [
    start_board(BG),
    # A stack of 7 and of 4, opponent blots and a checker on the bar, some borne off.
    hand_board({6: 7, 5: 4, 3: 2, 20: -1, 1: -1, 12: -3}, opp_bar=1, off=2, opp_off=9),
    # The mover on the bar, the opponent with a 5-stack on the mover's 19 point.
    hand_board({24: 2, 13: 4, 8: 3, 6: 5, 19: -5, 1: -2, 12: -4, 17: -3, 3: -1}, bar=1),
    # A race near the end: 3 checkers on 1-2, opponent on the mover's 20-24.
    hand_board({1: 2, 2: 1, 20: -2, 24: -3}, off=12, opp_off=10),
]


def test_weights_are_the_published_vectors():
    assert RACE_WEIGHTS.shape == CONTACT_WEIGHTS.shape == (122,)
    assert (RACE_WEIGHTS[0], RACE_WEIGHTS[119], RACE_WEIGHTS[121]) == (0.0, -12.32252, 3.42040)
    assert (CONTACT_WEIGHTS[0], CONTACT_WEIGHTS[60], CONTACT_WEIGHTS[121]) == (0.25696, -0.69851, -2.75800)
    assert RACE_WEIGHTS[0:120:5].tolist() == [0.0] * 24     # no "opponent blot" input in races
    # Sums of the 122 values as printed in pubeval.c (WT.race, WT.cntc).
    assert RACE_WEIGHTS.sum() == pytest.approx(-31.29905, abs=1e-9)
    assert CONTACT_WEIGHTS.sum() == pytest.approx(-6.72565, abs=1e-9)
    assert np.abs(CONTACT_WEIGHTS).sum() == pytest.approx(118.13987, abs=1e-9)


@pytest.mark.parametrize("race", [False, True])
def test_scores_equal_the_original_formula_on_hand_positions(race):
    boards = np.stack(HAND)
    got = pubeval_scores(boards, np.full(len(boards), race))
    want = [original_pubeval(race, b) for b in boards]
    assert got == pytest.approx(want, abs=1e-9)


def test_scores_equal_the_original_formula_on_afterstates_of_play():
    pool = random_positions(BG, n_games=8, plies=60, seed=4)
    rng = np.random.default_rng(0)
    after = generate(pool, rng.integers(1, 7, (len(pool), 2)), BG)
    rows = rng.choice(len(after), 300, replace=False)
    race = rng.random(300) < 0.5
    got = pubeval_scores(after.boards[rows], race)
    want = [original_pubeval(r, after.boards[i]) for r, i in zip(race, rows)]
    assert got == pytest.approx(want, abs=1e-9)


def test_bearing_off_the_last_checker_scores_like_the_original():
    b = hand_board({20: -5}, off=15, opp_off=10)
    assert pubeval_scores(b[None], [False])[0] == BORNE_OFF_SCORE == original_pubeval(False, b)


def test_race_flag_contact_rules():
    assert not is_race(start_board(BG)[None])[0]
    assert is_race(HAND[3][None])[0]
    # Opponent checker on the bar: contact while the mover has checkers on the board.
    assert not is_race(hand_board({1: 2, 2: 1, 20: -2, 24: -2}, opp_bar=1, off=12, opp_off=10)[None])[0]
    # Mover's rearmost on 10, opponent's rearmost on 5: they can still meet.
    assert not is_race(hand_board({10: 1, 3: 14, 5: -15})[None])[0]


def test_agent_takes_the_race_flag_from_the_position_before_the_move():
    """Contact before (8 point against the opponent's 7 point), gone after every play of 6-2:
    pubeval keeps the contact weights (8/2 6/4), where the race weights would play 8/off."""
    b = hand_board({8: 1, 6: 4, 5: 4, 4: 3, 3: 2, 2: 1, 7: -2, 12: -5, 18: -8})
    after = generate(b[None], np.array([[6, 2]]), BG, notation=True)
    assert not is_race(b[None])[0] and is_race(after.boards).all()
    assert after.notation(PubevalAgent().choose(after, BG, None)) == ["8/2 6/4"]
    race = pubeval_scores(after.boards, np.ones(len(after), bool))
    assert after.notation(int(np.argmax(race))) == ["8/off"]


def test_race_flag_without_the_positions_comes_from_the_afterstates():
    """Afterstates built without their positions: a position was a race when all its
    afterstates are (contact never comes back); exact but where every play breaks contact."""
    pool = random_positions(BG, n_games=16, plies=120, seed=9)
    after = generate(pool, np.random.default_rng(1).integers(1, 7, (len(pool), 2)), BG)
    with_positions = PubevalAgent().choose(after, BG, None)
    without = PubevalAgent().choose(dataclasses.replace(after, positions=None), BG, None)
    before_race = is_race(pool)
    all_after_race = np.minimum.reduceat(is_race(after.boards).astype(int), after.offsets[:-1]) == 1
    assert (all_after_race >= before_race).all()        # a race stays a race
    exact = before_race == all_after_race
    assert exact.mean() > 0.95
    assert (with_positions == without)[exact].all()
    for i in range(len(pool)):
        lo, hi = after.offsets[i], after.offsets[i + 1]
        s = pubeval_scores(after.boards[lo:hi], np.full(hi - lo, before_race[i]))
        assert s[with_positions[i] - lo] == s.max()


@pytest.mark.parametrize("dice, play", [((3, 1), "8/5 6/5"), ((6, 1), "13/7 8/7"), ((4, 2), "8/4 6/4"),
                                        ((5, 5), "13/3(2)"), ((6, 6), "24/18(2) 13/7(2)")])
def test_sensible_opening_plays(dice, play):
    after = generate(start_board(BG)[None], np.array([dice]), BG, notation=True)
    assert after.notation(PubevalAgent().choose(after, BG, np.random.default_rng(0))) == [play]


def test_beats_random_decisively():
    agent = make_agent("pubeval", "backgammon")
    recs = play_games(BG, (agent, RandomAgent()), 100, seed=3, record=False)
    recs += play_games(BG, (RandomAgent(), agent), 100, seed=4, record=False)
    assert summarize(recs, agent="pubeval")["win_rate"] > 0.9


def test_spec_builds_for_a_backgammon_family_variant():
    """``pubeval`` builds for any backgammon-family variant; its refusals (long nardy, an
    argument) are checked in tests/test_agents.py."""
    assert isinstance(make_agent("pubeval", "short_caucasian"), PubevalAgent)


def test_pubeval_as_an_evaluator_ranks_afterstates_as_its_scores_do():
    """load_evaluator("pubeval"): P(win) is a monotone map of the score (each afterstate's own
    race flag), no gammons, so the search's greedy choice is pubeval's where no afterstate
    finishes the game; long nardy is refused."""
    from nardy_ai.errors import NardyError
    from nardy_ai.evaluator import Evaluator, load_evaluator
    from nardy_ai.search import best_afterstates
    ev = load_evaluator("pubeval", "backgammon")
    assert isinstance(ev, Evaluator)
    positions = random_positions(BG, n_games=4, plies=40, seed=3)
    after = generate(positions, np.tile([[6, 3]], (len(positions), 1)), BG)
    p = ev.probabilities(after.boards)
    scores = pubeval_scores(after.boards, is_race(after.boards))
    assert p.shape == (len(after.boards), 5) and (p[:, 1:] == 0).all()
    assert ((0 < p[:, 0]) & (p[:, 0] < 1)).all()
    order = np.argsort(scores, kind="stable")
    assert (np.diff(p[order, 0]) >= 0).all()
    live = [np.ptp(scores[lo:hi]) > 0 and (after.boards[lo:hi, OFF] < 15).all()
            for lo, hi in zip(after.offsets[:-1], after.offsets[1:])]
    picks = best_afterstates(after, ev, 0)
    want = [lo + int(np.argmax(scores[lo:hi])) for lo, hi in zip(after.offsets[:-1], after.offsets[1:])]
    assert sum(live) > 10
    assert [a for a, ok in zip(picks, live) if ok] == [w for w, ok in zip(want, live) if ok]
    with pytest.raises(NardyError, match="backgammon family"):
        load_evaluator("pubeval", "long")
