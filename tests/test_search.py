"""n-ply search (nardy_ai/search.py) and the neural agents' ``td:PATH@Nply`` specs: values
against a plain per-roll computation, move filters, exact values at the
end of the game (COM-6), legal play in games."""

import numpy as np
import pytest

from nardy_ai import search
from nardy_ai.agents import make_agent
from nardy_ai.agents.neural import NeuralAgent, parse_td_spec
from nardy_ai.bench.positions import random_positions
from nardy_ai.board import OFF, flip, start_board
from nardy_ai.errors import NardyError, UnknownAgent
from nardy_ai.game import play_games
from nardy_ai.scoring import result_levels
from nardy_ai.model import NeuralEvaluator, equity, flip_outcomes, outcome_targets, save_checkpoint
from nardy_ai.movegen import generate
from nardy_ai.search import MoveFilter, afterstate_values, best_afterstates, filter_candidates, search_equity
from nardy_ai.variants import get_variant
from movegen_helpers import hand_board

V = get_variant("backgammon")
NET = NeuralEvaluator.create(V, hidden=(16,), seed=3, device="cpu")
EV = NET
ALL = (MoveFilter(1000, np.inf),)
#: The 21 rolls with their chances: a double 1/36, any other roll 2/36.
ROLLS21 = [((a, b), (1 if a == b else 2) / 36) for a in range(1, 7) for b in range(a, 7)]


def plain_values0(boards):
    """0-ply values: the net's, replaced by the exact outcome where the game is over."""
    boards = np.asarray(boards)
    out = NET.probabilities(boards).astype(float)
    for i, b in enumerate(boards):
        if b[OFF] == 15:
            out[i] = outcome_targets(result_levels(b[None], V), V)[0]
    return out


def plain_best_reply(position, dice, deeper):
    """The 0-ply best afterstate of ``position`` with ``dice``, valued by ``deeper``."""
    after = generate(position[None], np.array([dice]), V)
    vals = plain_values0(after.boards)
    best = int(np.argmax(equity(vals, V)))
    return deeper(after.boards[best]) if deeper else vals[best]


def plain_nply(afterstate, deeper):
    """The afterstate's value averaged over the opponent's 21 rolls, each reply chosen at 0-ply
    and valued by ``deeper`` (None: 0-ply, so this is 1-ply; plain_1ply: 2-ply)."""
    if afterstate[OFF] == 15:
        return plain_values0([afterstate])[0]
    total = np.zeros(5)
    for dice, chance in ROLLS21:
        total += flip_outcomes(plain_best_reply(flip(afterstate, V), dice, deeper), V) * chance
    return total


def plain_1ply(afterstate):
    return plain_nply(afterstate, None)


def plain_2ply(afterstate):
    return plain_nply(afterstate, plain_1ply)


OPENING = generate(start_board(V)[None], np.array([[3, 1]]), V).boards
# Contact with the opponent on the bar; a race where the opponent (to roll) may bear off its
# last checkers (exact losses among the replies); the mover's last checkers off (exact win).
HIT = hand_board({6: 5, 8: 3, 13: 4, 5: 2, 24: 1, 19: -5, 12: -5, 17: -2, 1: -2}, opp_bar=1)
END_RACE = hand_board({1: 1, 2: 1, 3: 1, 23: -1, 24: -1}, off=12, opp_off=13)
WON = hand_board({20: -3, 24: -2}, off=15, opp_off=10)
# Few checkers in contact, blots on both sides: hits and entries from the bar in the tree.
SMALL = hand_board({20: 1, 10: 1, 3: 1, 5: -1, 15: -1, 22: -1}, off=12, opp_off=12)


@pytest.mark.parametrize("board", [OPENING[0], HIT, END_RACE, WON, SMALL],
                         ids=["opening", "hit", "race", "won", "small"])
def test_1ply_values_equal_the_plain_per_roll_computation(board):
    got = afterstate_values(board[None], EV, 1)[0]
    assert got == pytest.approx(plain_1ply(board), abs=1e-6)


def test_2ply_value_equals_the_plain_computation():
    for board in (END_RACE, SMALL):
        got = afterstate_values(board[None], EV, 2)[0]
        assert got == pytest.approx(plain_2ply(board), abs=1e-6)


class Even:
    """An evaluator for which every unfinished game is a coin toss without gammons; it is
    never asked about finished games (the search values those itself)."""

    variant = V

    def probabilities(self, boards):
        assert (boards[:, OFF] < 15).all()
        return np.tile([0.5, 0, 0, 0, 0], (len(boards), 1))


def test_finished_games_get_their_exact_value():
    gammon = hand_board({20: -15}, off=15)
    assert afterstate_values(np.stack([WON, gammon]), EV, 0).tolist() == [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0]]
    assert search_equity(np.stack([WON, gammon]), Even(), 2).tolist() == [1.0, 2.0]
    assert search_equity(np.stack([WON, gammon, SMALL]), Even(), 0).tolist() == [1.0, 2.0, 0.0]


def test_1ply_decision_without_pruning_is_the_plain_argmax():
    boards = np.stack([flip(SMALL, V), flip(HIT, V)])
    after = generate(boards, np.array([[5, 2], [5, 2]]), V)
    picks = best_afterstates(after, EV, 1, ALL)
    for i in range(2):
        lo, hi = after.offsets[i], after.offsets[i + 1]
        plain = [equity(plain_1ply(b), V) for b in after.boards[lo:hi]]
        assert picks[i] - lo == int(np.argmax(plain))


def test_on_roll_values_average_the_best_play_of_each_roll():
    pos = flip(HIT, V)
    want = sum(equity(plain_best_reply(pos, d, None), V) * chance for d, chance in ROLLS21)
    assert search_equity(pos[None], EV, 1, on_roll=True)[0] == pytest.approx(want, abs=1e-6)
    assert search_equity(pos[None], EV, 0, on_roll=True)[0] == pytest.approx(
        -equity(plain_values0([HIT])[0], V), abs=1e-6)


def test_move_filter_keeps_the_best_at_most_k_within_the_threshold():
    eq = np.array([0.1, 0.5, 0.45, 0.2, 0.49, -1.0, 0.0, 0.3])
    offsets = np.array([0, 5, 6, 8])
    keep = filter_candidates(eq, offsets, np.ones(8, bool), MoveFilter(2, 0.1))
    assert np.flatnonzero(keep).tolist() == [1, 4, 5, 7]
    rng = np.random.default_rng(0)
    eq = rng.normal(size=400)
    offsets = np.array([0, 7, 8, 100, 250, 400])
    keep = filter_candidates(eq, offsets, np.ones(400, bool), MoveFilter(8, 0.5))
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        seg = keep[lo:hi]
        assert seg[np.argmax(eq[lo:hi])] and 1 <= seg.sum() <= 8
        assert (eq[lo:hi][seg] >= eq[lo:hi].max() - 0.5).all()


def test_pruned_search_keeps_the_0ply_best_and_chooses_among_the_kept():
    pool = random_positions(V, n_games=8, plies=40, seed=2)[::7]
    after = generate(pool, np.random.default_rng(5).integers(1, 7, (len(pool), 2)), V)
    eq0 = equity(NET.probabilities(after.boards), V)
    kept = filter_candidates(eq0, after.offsets, np.ones(len(eq0), bool), search.DEFAULT_FILTERS[1][0])
    best0 = best_afterstates(after, EV, 0)
    assert kept[best0].all()
    assert kept[best_afterstates(after, EV, 1)].all()
    # A filter that keeps one candidate turns the 1-ply decision into the 0-ply one.
    assert (best_afterstates(after, EV, 1, (MoveFilter(1, 1.0),)) == best0).all()


def test_chunked_generation_gives_the_same_values(monkeypatch):
    boards = np.stack([OPENING[0], HIT, END_RACE, OPENING[2], OPENING[3]])
    whole = afterstate_values(boards, EV, 1)
    monkeypatch.setattr(search, "MAX_POSITIONS", 30)
    assert np.allclose(afterstate_values(boards, EV, 1), whole, atol=1e-6)


def test_search_agents_play_legal_moves_in_games():
    agent = NeuralAgent(NET, name="td@1ply", plies=1)
    recs = play_games(V, (make_agent("pubeval", V), agent), 1, seed=1)
    assert recs[0].points > 0 and recs[0].turns
    pool = random_positions(V, n_games=4, plies=30, seed=6)[::30]
    after = generate(pool, np.random.default_rng(2).integers(1, 7, (len(pool), 2)), V)
    picks = NeuralAgent(NET, plies=2).choose(after, V, np.random.default_rng(0))
    assert ((picks >= after.offsets[:-1]) & (picks < after.offsets[1:])).all()


def test_0ply_agent_bears_off_the_last_checkers():
    pos = hand_board({1: 1, 2: 1, 20: -5}, off=13, opp_off=10)
    after = generate(pos[None], np.array([[2, 1]]), V)
    assert len(after) == 2
    pick = NeuralAgent(NET).choose(after, V, np.random.default_rng(0))
    assert after.boards[pick[0], OFF] == 15


def test_td_spec_with_search_depth(tmp_path):
    path = tmp_path / "net.pt"
    save_checkpoint(path, {"evaluator": NET.state()})
    assert parse_td_spec(f"{path}@2ply") == (str(path), 2, 2)
    assert parse_td_spec("runs/a@b/net.pt") == ("runs/a@b/net.pt", 0, 0)
    assert parse_td_spec(f"{path}@1ply+pipcube") == (str(path), 1, "pip")
    assert parse_td_spec(f"{path}+pipcube") == (str(path), 0, "pip")
    assert parse_td_spec(f"{path}@0ply+cube1ply") == (str(path), 0, 1)
    assert make_agent(f"td:{path}+cube2ply", "backgammon").cube_plies == 2
    with pytest.raises(UnknownAgent, match="3-ply"):
        make_agent(f"td:{path}+cube3ply", "backgammon")
    for suffix, plies in (("", 0), ("@0ply", 0), ("@1ply", 1), ("@2ply", 2)):
        agent = make_agent(f"td:{path}{suffix}", "backgammon")
        assert agent.plies == plies and agent.name == f"td:{path}{suffix}"
    with pytest.raises(UnknownAgent, match="3-ply"):
        make_agent(f"td:{path}@3ply", "backgammon")
    with pytest.raises(NardyError, match="plies"):
        NeuralAgent(NET, plies=5)
    with pytest.raises(NardyError, match="move filters"):
        NeuralAgent(NET, plies=2, filters=ALL)


@pytest.mark.parametrize("plies", [0, 1, 2])
def test_values_of_distinct_afterstates_equal_those_of_every_row(monkeypatch, plies):
    """A large batch is valued once per distinct afterstate: the same values as valuing
    every row (repeated rows included), at every depth."""
    boards = np.stack([END_RACE, SMALL, END_RACE, OPENING[0], SMALL, END_RACE])
    if plies == 0:
        boards = np.concatenate([OPENING, OPENING[::-1], boards])
    monkeypatch.setattr(search, "DISTINCT_MIN", 10 ** 9)
    every_row = afterstate_values(boards, EV, plies)
    monkeypatch.setattr(search, "DISTINCT_MIN", 2)
    calls = []
    real = search.distinct_boards
    monkeypatch.setattr(search, "distinct_boards", lambda b: calls.append(len(b)) or real(b))
    assert np.allclose(afterstate_values(boards, EV, plies), every_row, atol=1e-6, rtol=0)
    assert calls and calls[0] == len(boards)
