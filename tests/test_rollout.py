"""Rollouts (nardy_ai/rollout.py): exact results of decided positions (COM-6, BG-6, BG-TT, LN-7,
LN-8), hand-computed bear-offs (COM-5) made exact by the rotated and stratified dice, standard
errors, truncation against the search's own values, duplicate dice across positions, the same
figures on every backend, and the `nardy rollout` command."""

import json

import numpy as np
import pytest

from nardy_ai.agents.neural import NeuralAgent
from nardy_ai.backends import LocalProcesses, make_backend
from nardy_ai.bench.positions import random_positions
from nardy_ai.bench.speed import bench_rollout
from nardy_ai.board import flip, start_board
from nardy_ai.cli import main
from nardy_ai.errors import InvalidDice, InvalidPosition, UnknownAgent
from nardy_ai.model import NeuralEvaluator, flip_outcomes, n_outputs
from nardy_ai.driver import stratified_rolls
from nardy_ai.rollout import RolloutError, outcome_names, rollout
from nardy_ai.search import search_values
from nardy_ai.variants import get_variant
from agent_helpers import FirstPlay, tiny_net
from movegen_helpers import hand_board

BG = get_variant("backgammon")
LONG = get_variant("long")


def same(a, b):
    """Two rollout results with identical figures."""
    return all(np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True)
               for k in ("probs", "probs_se", "equity", "equity_se", "plies", "truncated"))


#: One checker each (COM-5): the mover's on its 6-point, the opponent's on its 1-point.
SIX_VS_ONE = hand_board({6: 1, 24: -1}, off=14, opp_off=14)
#: ... and on its 6-point.
SIX_VS_SIX = hand_board({6: 1, 19: -1}, off=14, opp_off=14)
#: Rolls that bear a lone checker off the 6-point: sum >= 6 (26 of 36) or 2-2 (three 2s).
P_OFF_FROM_SIX = 27 / 36


# --- decided positions -------------------------------------------------------------------------

@pytest.mark.parametrize("variant, opponent, level", [
    ("backgammon", {19: -15}, 2),              # BG-6: loser none off, none in the winner's home
    ("backgammon", {3: -15}, 3),               # BG-6: backgammon, loser in the winner's home
    ("short_trictrac", {12: -15}, 3),          # BG-TT: loser outside its own home: 4 points
    ("long", {12: -15}, 2),                    # LN-7: mars (all still on the head)
    ("long_dave", {12: -15}, 1),               # LN-8: no mars with dave
])
def test_a_decided_position_is_won_exactly_with_zero_error(variant, opponent, level):
    v = get_variant(variant)
    b = hand_board({1: 1, **opponent}, off=14)             # the mover bears off with any roll
    res = rollout(b, v, "random", games=72)
    L = len(v.scoring)
    expected = np.zeros(n_outputs(v))
    expected[0] = 1
    expected[1:level] = 1                                  # win at each level up to the result's
    assert np.array_equal(res.probs[0], expected) and not res.probs_se.any() and res.equity_se[0] == 0
    assert res.equity[0] == v.scoring[level - 1] and len(outcome_names(v)) == 2 * L - 1
    # The same board as the afterstate of the side that loses it: the opponent rolls and wins.
    lost = rollout(flip(b, v), v, "random", games=36, on_roll=False)
    assert np.array_equal(lost.probs[0], flip_outcomes(expected, v))
    assert lost.equity[0] == -v.scoring[level - 1]


def test_an_afterstate_that_has_won_is_scored_without_playing():
    after = hand_board({2: -14}, opp_bar=1, off=15)        # COM-6; loser on the bar: backgammon (BG-6)
    res = rollout(after, BG, "random", games=36, on_roll=False)
    assert np.array_equal(res.probs[0], [1, 1, 1, 0, 0]) and res.plies[0] == 0


# --- hand-computable bear-offs (COM-5) -----------------------------------------------------------

def test_one_roll_bear_off_is_exact_with_the_first_roll_rotated():
    # The mover bears off at once with 27 of the 36 rolls, else the opponent bears off and wins.
    for games in (36, 72, 180):
        res = rollout(SIX_VS_ONE, BG, "pubeval", games=games, seed=games)
        assert res.probs[0, 0] == pytest.approx(P_OFF_FROM_SIX, abs=1e-12)
        assert res.probs_se[0, 0] == pytest.approx(np.sqrt(0.75 * 0.25 / (games - 1)))


def test_two_roll_bear_off_is_exact_over_1296_games_and_within_4_se_otherwise():
    # Mover fails (9/36: its checker then sits on 3, 2 or 1 and comes off next time), then the
    # opponent's lone checker on its 6-point must also fail (9/36): P = 27/36 + (9/36)^2.
    exact = P_OFF_FROM_SIX + (9 / 36) ** 2
    full = rollout(SIX_VS_SIX, BG, "heuristic", games=1296, seed=3)
    assert full.probs[0, 0] == pytest.approx(exact, abs=1e-12)       # every (first, second) pair once
    part = rollout(SIX_VS_SIX, BG, "heuristic", games=72, seed=5)
    assert part.probs[0, 0] >= P_OFF_FROM_SIX - 1e-12                 # the first roll is exact
    assert abs(part.probs[0, 0] - exact) <= 4 * part.probs_se[0, 0]


def test_given_dice_are_played_first():
    assert rollout(SIX_VS_ONE, BG, "pubeval", games=36, dice=[6, 5]).probs[0, 0] == 1
    lost = rollout(SIX_VS_ONE, BG, "pubeval", games=36, dice=[1, 1])   # 6/5/4/3/2: the opponent is off
    assert lost.probs[0, 0] == 0 and lost.plies[0] == 2


def test_stratified_rolls_cover_every_roll_and_pair():
    first, second = stratified_rolls(7, np.arange(1296 * 2))
    for lo in range(0, 2592, 36):                          # each block of 36: every roll once
        assert sorted(first[lo:lo + 36]) == list(range(36)) == sorted(second[lo:lo + 36])
    for lo in (0, 1296):                                   # each 1296 games: every pair once
        assert len(set(zip(first[lo:lo + 1296], second[lo:lo + 1296]))) == 1296
    assert not np.array_equal(stratified_rolls(8, np.arange(36))[0], first[:36])   # seeded order


# --- statistics -----------------------------------------------------------------------------------

def test_standard_errors_shrink_like_one_over_sqrt_games_and_the_start_is_near_even():
    start = start_board(BG)
    small = rollout(start, BG, "random", games=144, seed=1)
    big = rollout(start, BG, "random", games=1296, seed=2)
    assert 2.4 < small.probs_se[0, 0] / big.probs_se[0, 0] < 3.6              # sqrt(9) = 3
    assert 2.4 < small.equity_se[0] / big.equity_se[0] < 3.6
    p = big.probs[0, 0]
    assert big.probs_se[0, 0] == pytest.approx(np.sqrt(p * (1 - p) / 1295))
    assert abs(p - 0.5) < 4 * big.probs_se[0, 0]


@pytest.mark.parametrize("variant", ["backgammon", "long"])
def test_on_roll_and_afterstate_views_are_the_same_games_mirrored(variant):
    v = get_variant(variant)
    boards = random_positions(v, n_games=3, plies=12, seed=4)[-3:]
    on_roll = rollout(boards, v, "random", games=36, seed=9)
    after = rollout(flip(boards, v), v, "random", games=36, seed=9, on_roll=False)
    assert np.allclose(after.probs, flip_outcomes(on_roll.probs, v), rtol=0, atol=1e-12)
    assert np.allclose(after.equity, -on_roll.equity, rtol=0, atol=1e-12)
    assert np.array_equal(after.plies, on_roll.plies)


# --- duplicate dice ---------------------------------------------------------------------------------

def test_identical_positions_in_one_batch_give_identical_results():
    a, b = random_positions(BG, n_games=2, plies=20, seed=6)[-2:]
    res = rollout(np.stack([a, b, a]), BG, FirstPlay(), games=72, seed=2, chunk=36)
    assert np.array_equal(res.probs[0], res.probs[2]) and res.equity[0] == res.equity[2]
    alone = rollout(a, BG, FirstPlay(), games=72, seed=2)        # another grid: the same dice
    assert np.array_equal(alone.probs[0], res.probs[0])
    assert not np.array_equal(rollout(a, BG, FirstPlay(), games=72, seed=3).probs, alone.probs)


# --- truncation ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["backgammon", "long"])
def test_truncation_at_0_and_1_ply_is_the_evaluators_0_and_1_ply_value(variant):
    v = get_variant(variant)
    net = NeuralEvaluator.create(v, hidden=(8,), seed=1, device="cpu")
    ev = net
    boards = np.concatenate([start_board(v)[None], random_positions(v, n_games=2, plies=15, seed=2)[-2:]])
    agent = NeuralAgent(net)
    zero = rollout(boards, v, agent, games=36, truncate=0)
    assert np.allclose(zero.probs, search_values(boards, ev, 0, on_roll=True), atol=1e-6)
    assert (zero.probs_se < 1e-6).all() and (zero.plies == 0).all() and (zero.truncated == 1).all()
    one = rollout(boards, v, agent, games=72, truncate=1)         # each first roll twice
    assert np.allclose(one.probs, search_values(boards, ev, 1, on_roll=True), atol=1e-6)
    assert (one.probs_se > 0).any()
    # An explicit evaluator scores the truncated games of an agent without one.
    assert np.allclose(rollout(boards, v, "random", games=36, truncate=0, evaluator=net).probs, zero.probs)


def test_truncation_needs_an_evaluator():
    with pytest.raises(RolloutError, match="needs an evaluator.*'random'"):
        rollout(start_board(BG), BG, "random", games=36, truncate=5)


def test_bad_settings_are_refused():
    start = start_board(BG)
    with pytest.raises(UnknownAgent):
        rollout(start, BG, "nobody", games=36)
    with pytest.raises(InvalidPosition, match="position 1: .*15 checkers"):
        rollout(np.stack([start, hand_board({6: 1})]), BG, "random", games=36)
    with pytest.raises(InvalidPosition, match="already over"):
        rollout(hand_board({19: -15}, off=15), BG, "random", games=36)
    with pytest.raises(InvalidDice):
        rollout(start, BG, "random", games=36, dice=[0, 3])
    with pytest.raises(RolloutError, match="on_roll=True"):
        rollout(start, BG, "random", games=36, dice=[3, 1], on_roll=False)
    with pytest.raises(RolloutError, match="games"):
        rollout(start, BG, "random", games=0)


# --- backends ------------------------------------------------------------------------------------------

def test_one_and_two_processes_give_identical_results():
    boards = random_positions(BG, n_games=2, plies=10, seed=1)[-2:]
    inline = rollout(boards, BG, "random", games=72, seed=4, chunk=36)     # 2 x 2 tasks
    with LocalProcesses(2, log=lambda s: None) as backend:
        two = rollout(boards, BG, "random", games=72, seed=4, chunk=36, backend=backend)
    assert same(inline, two)


def test_ray_gives_the_same_results_as_this_process(ray_instance):
    inline = rollout(start_board(LONG), LONG, "heuristic", games=72, seed=4, chunk=36)
    backend = make_backend("ray", log=lambda s: None)
    assert same(inline, rollout(start_board(LONG), LONG, "heuristic", games=72, seed=4, chunk=36,
                                backend=backend))


# --- the command -----------------------------------------------------------------------------------------

def position_json(board, **extra) -> str:
    b = board.astype(int)
    return json.dumps({"variant": "backgammon", "points": b[:24].tolist(), "bar": b[24:26].tolist(),
                       "off": b[26:].tolist(), **extra})


@pytest.mark.parametrize("argv, message", [
    (["--agent", "nobody"], "unknown agent 'nobody'"),
    (["--agent", "random", "--truncate", "4"], "needs an evaluator"),
    (["--agent", "random", "--games", "0"], "games must be"),
    (["--agent", "random", "--variant", "long"], "but the position is for backgammon"),
])
def test_cli_errors_are_one_line(argv, message, capsys):
    assert main(["rollout", position_json(SIX_VS_ONE), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nardy: error:") and message in err and "Traceback" not in err


def test_cli_bad_position_is_one_line(capsys):
    assert main(["rollout", '{"variant": "backgammon", "points": [1]}', "--agent", "random"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nardy: error:") and "points" in err


def test_cli_prints_probabilities(capsys):
    assert main(["rollout", position_json(SIX_VS_ONE), "--agent", "pubeval", "--games", "36"]) == 0
    out = capsys.readouterr().out
    assert "rolls first" in out and "lose backgammon" in out and "0.7500" in out
    assert main(["rollout", position_json(SIX_VS_ONE, dice=[1, 1]), "--agent", "pubeval", "--games", "36",
                 "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["probs"] == [0, 0, 0, 0, 0] and r["dice"] == [1, 1] and r["games"] == 36


def test_bench_rollout_times_full_and_truncated_games(tmp_path):
    path = tmp_path / "net.pt"
    tiny_net(path, BG, seed=1)
    r = bench_rollout(BG, [f"td:{path}", "heuristic"], seconds=0.01, games=36, truncate=3)
    modes = [(a["agent"].split(":")[0], a["truncate"]) for a in r["rows"]]
    assert modes == [("td", None), ("td", 3), ("heuristic", None)]
    assert all(a["games"] >= 36 and a["games_per_s"] > 0 for a in r["rows"]) and r["machine"]
