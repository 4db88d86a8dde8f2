"""The game core (issue #13): its drivers play the games today's runner played (pinned records),
and its pure functions follow the rules they cite."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import numpy as np
import pytest

from nardy_ai import core
from nardy_ai.agents import make_agent
from nardy_ai.board import OFF, flip, start_board
from nardy_ai.cube import CENTRE
from nardy_ai.errors import IllegalCubeAction
from nardy_ai.game import GameRecord, play_games, replay
from nardy_ai.variants import parse_variant_spec

DATA = os.path.join(os.path.dirname(__file__), "data")


def _pinned() -> list[GameRecord]:
    with open(os.path.join(DATA, "pinned_games.jsonl"), encoding="utf-8") as f:
        return [GameRecord.from_json(line) for line in f if line.strip()]


def _batches():
    """The pinned records grouped by the call that played them."""
    out: dict[tuple, list[GameRecord]] = {}
    for r in _pinned():
        key = (r.variant, json.dumps(r.options, sort_keys=True), r.white, r.black, r.seed, r.stakes)
        out.setdefault(key, []).append(r)
    return list(out.values())


@pytest.mark.parametrize("recs", _batches(), ids=lambda rs: f"{rs[0].variant}-{rs[0].stakes}-{rs[0].seed}")
def test_runner_plays_the_pinned_games(recs):
    """COM-7, COM-6, BG-6, BG-TT, LN-7, LN-8, CUBE-1, CUBE-D: the core-driven runner gives the
    records the pre-core runner wrote for the same seeds, move for move."""
    r0 = recs[0]
    spec = ",".join([r0.variant] + [f"{k}={str(v).lower()}" for k, v in r0.options.items()])
    v = parse_variant_spec(spec)
    stakes = None if r0.stakes == "none" else r0.stakes
    if r0.variant == "long_dave" and stakes == "dave-geometric":
        stakes = "dave"
    agents = (make_agent(r0.white, v), make_agent(r0.black, v))
    got = play_games(v, agents, len(recs), seed=r0.seed, stakes=stakes)
    assert [g.to_json() for g in got] == [r.to_json() for r in recs]
    replay(got)


def _pinned_loops() -> dict:
    with open(os.path.join(DATA, "pinned_loops.json"), encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.parametrize("variant", ["backgammon", "long"])
def test_samplers_give_the_pinned_positions(variant):
    """The benchmarks' samplers, now drivers of the core, meet the same positions as before."""
    from make_pinned_games import sampler_digests
    pinned = _pinned_loops()
    for key, value in sampler_digests(variant).items():
        assert value == pinned[key], key


@pytest.mark.parametrize("variant", ["backgammon", "long"])
def test_self_play_gives_the_pinned_games(variant):
    """TD self-play (training.selfplay.SelfPlay), a driver of the core, plays the pinned games."""
    pytest.importorskip("torch")
    from make_pinned_games import selfplay_digest
    pinned = _pinned_loops()
    for key, value in selfplay_digest(variant).items():
        assert value == pinned[key], key


def test_start_decides_the_first_mover_by_lot():
    """COM-7: the side with the higher lot die moves first and plays both lot dice; ties are
    rolled again; BG-TT: white always starts, no lot."""
    rng = np.random.default_rng(1)
    games, rounds = core.start("backgammon", 500, rng)
    assert np.all(games.lot[:, 0] != games.lot[:, 1])
    assert np.array_equal(games.first, (games.lot[:, 1] > games.lot[:, 0]).astype(int))
    assert np.array_equal(games.turn, games.first)
    assert len(rounds) > 1                              # some ties were rolled again
    dice = core.roll(games, rng)
    assert np.array_equal(dice, games.lot)              # the opening roll is the lot's dice
    tt, rounds = core.start("short_trictrac", 5, rng)
    assert rounds == [] and not tt.first.any()


def test_play_scores_and_passes_the_turn():
    """COM-6 and BG-6: a bear-off of the 15th checker ends the game with the level's points;
    any other play flips the board to the next mover and passes the turn."""
    v = parse_variant_spec("backgammon")
    games, _ = core.start(v, 2, np.random.default_rng(0))
    last = np.zeros(28, np.int8)
    last[0], last[OFF] = 1, 14                          # one checker left on the 1-point
    last[18] = -15                                      # the loser: 15 in its home, none off
    board = games.board.copy()
    board[0] = last
    games = replace(games, board=board)
    after = core.legal(games, np.array([[6, 5], [3, 1]]))
    won = after.boards[after.offsets[0]]
    assert won[OFF] == 15
    moved = after.boards[after.offsets[1]]
    nxt = core.play(games, np.array([0, 1]), np.stack([won, moved]))
    assert nxt.over.tolist() == [True, False]
    assert nxt.winner[0] == games.turn[0] and nxt.level[0] == 2 and nxt.points[0] == 2  # gammon
    assert nxt.turn[1] == 1 - games.turn[1] and nxt.plies.tolist() == [1, 1]
    assert np.array_equal(nxt.board[1], flip(moved[None], v)[0])
    again = core.play(nxt, np.array([1]), core.legal(nxt, np.array([[0, 0], [2, 1]]), np.array([1])).boards[:1])
    assert again.winner[0] == nxt.winner[0] and again.points[0] == 2   # an ended game stays


def test_stakes_take_beaver_and_refuse():
    """CUBE-1 / BG-B / CUBE-D: a take doubles the stake and gives the taker the cube; a beaver
    doubles it again and the beaverer keeps it; a pass ends the game for the current stake;
    arithmetic dave raises by one."""
    v = parse_variant_spec("backgammon,beaver=true")
    games, _ = core.start(v, 3, np.random.default_rng(2), stakes="cube")
    assert games.stakes.value.tolist() == [1, 1, 1] and (games.stakes.owner == CENTRE).all()
    idx = np.arange(3)
    assert core.may_double(games, idx).all()
    g = core.cube_action(games, idx, np.array([0, 1, 1]), "double")
    assert not core.may_double(g, idx).any()                    # raises await their answers
    g = core.cube_action(g, np.array([0]), 1, "take")
    assert g.stakes.value[0] == 2 and g.stakes.owner[0] == 1 and g.stakes.turned[0]
    assert core.may_double(g, np.array([0])).tolist() == [g.turn[0] == 1]
    g = core.cube_action(g, np.array([1]), 0, "beaver")
    g = core.cube_action(g, np.array([1]), 1, "take")
    assert g.stakes.value[1] == 4 and g.stakes.owner[1] == 0
    g = core.cube_action(g, np.array([2]), 0, "pass")
    assert g.over[2] and g.passed[2] and g.winner[2] == 1 and g.points[2] == 1 and g.level[2] == 1
    assert not core.may_double(g, np.array([2]))[0]
    with pytest.raises(IllegalCubeAction, match="CUBE-1"):
        core.cube_action(g, np.array([0]), 0, "double")         # player 1 owns the cube
    dave, _ = core.start("long", 1, np.random.default_rng(0), stakes="dave-arithmetic")
    for player in (0, 1):
        dave = core.cube_action(core.cube_action(dave, [0], player, "double"), [0], 1 - player, "take")
    assert dave.stakes.value[0] == 3


def test_murphy_doubles_the_stake_per_lot_tie():
    """BG-M: each tie of the lot dice doubles the stake, up to murphy_cap."""
    v = parse_variant_spec("backgammon,murphy_cap=1")
    games, rounds = core.start(v, 400, np.random.default_rng(3), stakes="cube")
    ties = np.zeros(400, int)
    for members, r in rounds:
        ties[members] += r[:, 0] == r[:, 1]
    assert ties.max() >= 2                          # the cap matters in this sample
    assert np.array_equal(games.stakes.value, 2 ** np.minimum(ties, 1))


def test_restart_and_random_play_to_the_end():
    """Random play through the core ends every game with a result (COM-6); restart puts the
    chosen games back at the start, the others untouched."""
    rng = np.random.default_rng(7)
    for variant in ("backgammon", "short_trictrac", "long"):
        games, _ = core.start(variant, 64, rng)
        for _ in range(2000):
            idx = games.running()
            if not len(idx):
                break
            dice = core.roll(games, rng)
            after = core.legal(games, dice, idx)
            games = core.play(games, idx, after.boards[core.random_choice(after, rng)])
        assert games.over.all()
        assert (games.level >= 1).all() and (games.points >= 1).all()
        back = core.restart(games, np.arange(10))
        assert not back.over[:10].any() and back.over[10:].all()
        assert (back.board[:10] == start_board(games.variant)).all() and (back.plies[:10] == 0).all()


def test_cube_views_are_the_stakes_seen_by_the_decider():
    """One representation: agents see the core's stakes arrays (CUBE-1 access, BG-J turned),
    as arrays or, iterated, as the protocol's dicts; dicts read back to the same arrays."""
    from nardy_ai.cube import Stakes
    v = parse_variant_spec("backgammon")
    games, _ = core.start(v, 3, np.random.default_rng(0), stakes="cube")
    games = core.cube_action(games, np.array([1, 2]), 0, "double")
    games = core.cube_action(games, np.array([1, 2]), 1, "take")    # player 1 owns the cube at 2 in games 1, 2
    views = games.stakes.views(np.arange(3), np.array([0, 1, 0]))
    assert views.access.tolist() == [0, 1, -1] and views.value.tolist() == [1, 2, 2]
    assert views.next.tolist() == [2, 4, 4] and views.turned.tolist() == [False, True, True]
    dicts = list(views)
    assert dicts[0] == {"value": 1, "owner": "centre", "next": 2, "turned": False, "stakes": "cube"}
    assert [d["owner"] for d in dicts] == ["centre", "mover", "opponent"]
    back = Stakes.from_dicts(dicts, games.variant)
    for name in ("value", "access", "next", "turned", "on_roll"):
        assert np.array_equal(getattr(back, name), getattr(views, name)), name
    beaver = games.stakes.views(np.array([1]), np.array([1]), on_roll=True)
    assert beaver[0]["on_roll"] is True
    dave, _ = core.start("long", 1, np.random.default_rng(0), stakes="dave-arithmetic")
    dave = core.cube_action(core.cube_action(dave, [0], 1, "double"), [0], 0, "take")
    assert dave.stakes.views(np.array([0]), np.array([1])).next.tolist() == [3]   # CUBE-D: +1


def test_rolled_keeps_the_roll_in_the_state():
    """The state may hold the roll (pgx style): rolled() draws what roll() draws."""
    a, _ = core.start("backgammon", 8, np.random.default_rng(4))
    b = a
    r1, r2 = np.random.default_rng(9), np.random.default_rng(9)
    dice = core.roll(a, r1)
    b = core.rolled(b, r2)
    assert np.array_equal(b.dice, dice)
    assert np.array_equal(core.legal(b).boards, core.legal(a, dice).boards)
    after = core.legal(b)
    assert core.play(b, np.arange(8), after.boards[after.offsets[:-1]]).dice is None   # used up
    with pytest.raises(ValueError, match="needs dice"):
        core.legal(a)
