"""The game driver (nardy_ai/driver.py): the loops that are calls of it give what they gave
before it for the same seeds (digests pinned by tests/make_pinned_drivers.py; a torch net's
results by value, within NET_TOLERANCE), and its parts
(dice sources, the checked policy question, the stakes stage, the run's hooks) do what they say."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from nardy_ai import core, driver
from nardy_ai.agents import make_agent
from nardy_ai.agents.base import Agent
from nardy_ai.errors import IllegalPlay
from dataclasses import replace
from nardy_ai.variants import parse_variant_spec

import make_pinned_drivers as pins

DATA = os.path.join(os.path.dirname(__file__), "data")


def _pinned() -> dict:
    with open(os.path.join(DATA, "pinned_drivers.json"), encoding="utf-8") as f:
        return json.load(f)


#: How far a torch net's pinned values may move on another CPU (float32 products round
#: differently there); the plays and plies they lead to must not move at all.
NET_TOLERANCE = 1e-6


def _check(got: dict) -> None:
    pinned = _pinned()
    assert got and set(got) <= set(pinned)
    for key, value in got.items():
        if isinstance(value, dict):
            assert set(value) == set(pinned[key]), key
            for name, array in value.items():
                np.testing.assert_allclose(array, pinned[key][name], rtol=0, atol=NET_TOLERANCE,
                                           err_msg=f"{key}: {name}")
        else:
            assert value == pinned[key], key


@pytest.mark.parametrize("digests, needs", [
    (pins.replay_digest, None), (pins.rollout_digests, "torch"), (pins.cube_rollout_digests, "torch"),
    (pins.env_digests, "gymnasium"), (pins.aec_digests, "pettingzoo")], ids=lambda x: getattr(x, "__name__", x))
def test_loops_give_the_pinned_results(digests, needs):
    """game.replay, rollouts, cubeful rollouts and the Gymnasium and PettingZoo environments,
    calls of the driver, give what they gave before it for the same seeds."""
    if needs:
        pytest.importorskip(needs)
    _check(digests())


# --- the driver's parts ------------------------------------------------------------------------

class _First(Agent):
    """The first legal afterstate; counts its calls."""
    name = "first"

    def __init__(self):
        self.calls = 0

    def choose(self, after, variant, rng):
        self.calls += 1
        return after.offsets[:-1].copy()


class _Doubler(_First):
    """Always doubles; takes as told."""
    def __init__(self, takes: bool):
        super().__init__()
        self.takes = takes

    def double(self, boards, cubes, v):
        return np.ones(len(boards), bool), None

    def take(self, boards, cubes, v):
        return np.full(len(boards), self.takes), None


def test_seeded_dice_follow_the_opening_rule():
    """COM-7: 'lot' plays the lot's dice on a first turn; 'random' one of the 30 unequal rolls;
    None an ordinary roll; every source draws a roll for every game of the batch."""
    games, _ = core.start("backgammon", 300, np.random.default_rng(0))
    idx = np.arange(300)
    lot = driver.SeededDice(np.random.default_rng(1))(games, 0, idx)
    assert np.array_equal(lot, games.lot)
    rnd = driver.SeededDice(np.random.default_rng(1), opening="random")(games, 0, idx)
    assert (rnd[:, 0] != rnd[:, 1]).all() and not np.array_equal(rnd, games.lot)
    plain = driver.SeededDice(np.random.default_rng(1), opening=None)(games, 0, idx)
    assert (plain[:, 0] == plain[:, 1]).any()                        # doubles allowed
    sub = driver.SeededDice(np.random.default_rng(1), opening=None)(games, 0, idx[::3])
    assert np.array_equal(sub, plain[::3])                            # the same draws, any subset
    with pytest.raises(ValueError, match="opening"):
        driver.SeededDice(np.random.default_rng(1), opening="lots")


def test_stratified_dice_play_given_rolls_first_and_the_same_dice_per_game_number():
    games = core.fresh("backgammon", 72)
    given = np.tile([[6, 5]], (72, 1))
    d = driver.StratifiedDice(4, np.arange(36), given)
    idx = np.arange(72)
    assert (d(games, 0, idx) == [6, 5]).all()
    first = d(games, 1, idx)
    assert sorted(map(tuple, first[:36])) == sorted(map(tuple, driver.ROLLS36))   # every roll once
    assert np.array_equal(first[:36], first[36:])                    # rows 36 apart: the same game
    for ply in (2, 3, 9):
        assert np.array_equal(d(games, ply, idx[36:]), d(games, ply, idx)[36:])


def test_choose_asks_each_seat_once_and_checks_the_picks():
    v = parse_variant_spec("backgammon")
    games, _ = core.start(v, 6, np.random.default_rng(2))
    after = core.legal(games, core.roll(games, np.random.default_rng(3)))
    a, b = _First(), _First()
    rows = driver.choose(after, (a, b), games.turn, v, None)
    assert a.calls == (games.turn == 0).any() and b.calls == (games.turn == 1).any()
    assert np.array_equal(rows, after.offsets[:-1])
    assert (driver.choose(after, (None, b), games.turn, v, None)[games.turn == 0] == -1).all()

    class Cheat(_First):
        name = "cheat"

        def choose(self, after, variant, rng):
            return after.offsets[1:].copy()
    with pytest.raises(IllegalPlay, match="cheat"):
        driver.choose(after, Cheat(), games.turn, v, None)


def test_run_hooks_restart_and_stop():
    """plies stops a continuous run; on_end sees each finished game once and restart puts it
    back; max_plies raises the loop's error or, without one, stops (truncation); a seat
    decided outside stops the run with its games pending."""
    rng = np.random.default_rng(5)
    ended, plies = [], []
    out = driver.run(core.fresh("backgammon", 8), driver.SeededDice(rng, None), make_agent("random", "backgammon"),
                     rng, plies=300, restart=True, on_end=lambda g, done: ended.extend(g.level[done].tolist()),
                     on_ply=lambda rec, g: plies.append(len(rec.idx)))
    assert out.ply == 300 and plies == [8] * 300 and not out.games.over.any()
    assert len(ended) > 8 and all(lv >= 1 for lv in ended)
    games, _ = core.start("long", 4, np.random.default_rng(6))
    with pytest.raises(driver.GameTooLong, match="cap"):
        driver.run(games, driver.SeededDice(np.random.default_rng(6)), _First(), max_plies=10,
                   too_long=lambda g, idx: driver.GameTooLong(f"cap {len(idx)}"))
    cut = driver.run(games, driver.SeededDice(np.random.default_rng(6)), _First(), max_plies=10)
    assert cut.ply == 10 and (cut.games.plies == 10).all() and cut.pending is None
    wait = driver.run(games, driver.SeededDice(np.random.default_rng(6)), (None, _First()))
    assert wait.pending is not None and (wait.games.turn[wait.pending.idx] == 0).all()
    rec = wait.pending
    moved = driver.play_pending(wait.games, rec, rec.after.offsets[:-1][rec.pending()])
    assert (moved.turn[rec.idx[rec.pending()]] == 1).all()
    with pytest.raises(IllegalPlay):
        driver.play_pending(wait.games, rec, rec.after.offsets[1:][rec.pending()])


def test_cube_stage_waits_for_the_first_roll_and_logs_the_actions():
    """COM-7: no raise before the lot's roll is played; CUBE-1: a refused raise ends the game
    at the current stake, a take doubles it; the history lists each action with its ply."""
    v = parse_variant_spec("backgammon")
    games, _ = core.start(v, 2, np.random.default_rng(0), stakes="cube")
    history = [[], []]
    stage = driver.CubeStage((_Doubler(True), _Doubler(False)), history)
    idx = np.arange(2)
    assert stage(games, 0, idx) is games                       # first turn: the lot's dice
    later = replace(games, plies=np.array([3, 3]))
    out = stage(later, 3, idx)
    white = np.flatnonzero(later.turn == 0)
    black = np.flatnonzero(later.turn == 1)
    assert out.passed[white].all() and (out.winner[white] == 0).all()   # black refuses white's raise
    assert not out.over[black].any() and (out.stakes.value[black] == 2).all()   # white takes
    for g in white:
        assert history[g] == [[3, 0, "double", 1], [3, 1, "pass", 1]]
    for g in black:
        assert history[g] == [[3, 1, "double", 1], [3, 0, "take", 2]]
    assert driver.CubeStage((_Doubler(True),) * 2, from_ply=1)(later, 0, idx) is later
