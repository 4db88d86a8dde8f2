"""Agents: the batched choice helpers, the random and heuristic agents, the agent registry."""

import numpy as np
import pytest

from nardy_ai.agents import (AGENTS, HeuristicAgent, RandomAgent, make_agent, register_agent,
                             segment_argmax, segment_ids, subset)
from nardy_ai.board import start_board
from nardy_ai.errors import UnknownAgent
from nardy_ai.game import play_games, summarize
from nardy_ai.movegen import generate
from nardy_ai.variants import get_variant
from agent_helpers import FirstPlay


def _opening_afterstates(variant, dice, notation=False):
    v = get_variant(variant)
    boards = np.repeat(start_board(v)[None], len(dice), axis=0)
    return v, generate(boards, np.array(dice), v, notation=notation)


def test_segment_argmax_first_best_without_rng():
    scores = np.array([1.0, 3.0, 3.0, 0.0, -2.0, -1.0, -1.0])
    offsets = np.array([0, 3, 4, 7])
    assert segment_argmax(scores, offsets).tolist() == [1, 3, 5]


def test_segment_argmax_breaks_ties_uniformly():
    scores = np.array([5.0, 5.0, 1.0, 5.0, 2.0, 2.0])
    offsets = np.array([0, 4, 6])
    rng = np.random.default_rng(0)
    picks = np.array([segment_argmax(scores, offsets, rng) for _ in range(3000)])
    assert set(picks[:, 0]) == {0, 1, 3} and set(picks[:, 1]) == {4, 5}
    counts = np.bincount(picks[:, 0], minlength=4)[[0, 1, 3]]
    assert counts.min() > 850          # each of three tied rows about 1000 times


def test_segment_ids_and_subset_map_rows_back():
    v, after = _opening_afterstates("backgammon", [[3, 1], [6, 6], [2, 1], [5, 4]])
    assert segment_ids(after.offsets).tolist() == after.parent.tolist()
    sub, rows = subset(after, np.array([3, 1]))
    assert np.array_equal(sub.boards, after.boards[rows])
    assert sub.counts().tolist() == [after.counts()[3], after.counts()[1]]
    assert (after.parent[rows] == np.array([3, 1])[sub.parent]).all()


def test_random_agent_is_uniform_over_afterstates():
    v, after = _opening_afterstates("backgammon", [[6, 5]] * 4000)
    picks = RandomAgent().choose(after, v, np.random.default_rng(1))
    assert ((picks >= after.offsets[:-1]) & (picks < after.offsets[1:])).all()
    k = int(after.counts()[0])
    hist = np.bincount(picks - after.offsets[:-1], minlength=k)
    assert hist.min() > 0.6 * 4000 / k


@pytest.mark.parametrize("dice, play", [((3, 1), "8/5 6/5"), ((6, 1), "13/7 8/7"), ((4, 2), "8/4 6/4")])
def test_heuristic_makes_the_classic_opening_points(dice, play):
    v, after = _opening_afterstates("backgammon", [dice], notation=True)
    pick = HeuristicAgent().choose(after, v, np.random.default_rng(0))
    assert after.notation(pick) == [play]


def test_heuristic_prefers_hitting_when_the_pip_swing_is_large():
    # BG-3: the opponent's blot on the mover's 5-point; 4-1 can hit it with 6/5*.
    v = get_variant("backgammon")
    b = start_board(v)
    b[0] = -1                          # one of the opponent's back checkers moved up ...
    b[4] = -1                          # ... to the mover's 5-point
    after = generate(b[None], np.array([[4, 1]]), v, notation=True)
    pick = HeuristicAgent().choose(after, v, np.random.default_rng(0))
    assert "*" in after.notation(pick)[0]


def test_heuristic_leaves_the_head_in_long_nardy():
    # LN-3: one checker from the head per turn; the heuristic always takes it when it can.
    v = get_variant("long")
    b = start_board(v)
    b[23], b[18], b[15] = 13, 1, 1
    after = generate(b[None], np.array([[5, 2]]), v)
    assert after.counts()[0] > 1 and (after.boards[:, 23] == 13).any()
    pick = HeuristicAgent().choose(after, v, np.random.default_rng(0))
    assert after.boards[pick[0], 23] == 12


def test_make_agent_builds_known_agents():
    assert isinstance(make_agent("random", "backgammon"), RandomAgent)
    agent = make_agent("heuristic", "long")
    assert isinstance(agent, HeuristicAgent) and agent.name == "heuristic"


@pytest.mark.parametrize("spec,message", [
    pytest.param("alphazero", "unknown agent 'alphazero'.*random.*heuristic", id="lists-known-agents"),
    pytest.param("random:fast", "takes no argument", id="random-argument"),
    pytest.param("pubeval:fast", "no argument", id="pubeval-argument"),
    pytest.param("gnubg:3ply", "gnubg:0ply, gnubg:1ply or gnubg:2ply", id="gnubg-plies"),
    pytest.param("ext:no-such-engine --fast", "no-such-engine", id="ext-missing-program"),
    pytest.param("ext:", "needs a command", id="ext-no-command"),
])
def test_bad_agent_specs_are_refused_naming_the_rule(spec, message):
    """A bad name or argument is refused with UnknownAgent before any optional package (gnubg)
    or external program is needed."""
    with pytest.raises(UnknownAgent, match=message):
        make_agent(spec, "backgammon")


@pytest.mark.parametrize("spec,variant,message", [
    ("gnubg:0ply", "long", "not long"),
    ("gnubg", "short_trictrac", "not short_trictrac"),
    ("pubeval", "long", "backgammon family"),
], ids=["gnubg-long", "gnubg-short-trictrac", "pubeval-long"])
def test_backgammon_engines_refuse_other_families(spec, variant, message):
    """gnubg and pubeval play the backgammon family only; no optional package is needed to say so."""
    with pytest.raises(UnknownAgent, match=message):
        make_agent(spec, variant)


def test_register_agent_adds_a_prefix_with_an_argument():
    class Fixed(FirstPlay):
        def __init__(self, arg):
            self.arg = arg

    register_agent("fixed", lambda arg, variant: Fixed(arg))
    try:
        assert make_agent('fixed:"cmd --x"@2ply', "long").arg == '"cmd --x"@2ply'
    finally:
        del AGENTS["fixed"]


@pytest.mark.parametrize("variant", ["backgammon", "long"])
def test_heuristic_beats_random(variant):
    # 200 games, seats alternating: 100 with the heuristic as white, 100 as black.
    v = get_variant(variant)
    h, r = HeuristicAgent(), RandomAgent()
    records = (play_games(v, (h, r), 100, seed=11, record=False)
               + play_games(v, (r, h), 100, seed=12, record=False))
    s = summarize(records, "heuristic")
    assert s["games"] == 200 and s["agents"] == ["heuristic", "random"]
    assert s["win_rate"] >= 0.9, s
    assert s["points_per_game_ci95"][0] > 0
