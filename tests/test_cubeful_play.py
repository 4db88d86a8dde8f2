"""Cubeful checker play (CUBE-1, CUBE-D): in a game with stakes a neural agent ranks its plays
by the cubeful equity of each afterstate (:func:`nardy_ai.cubeful.afterstate_values`: the
opponent's node with its own cube decision inside) when made with ``+cubefulplay``, as gnubg
does in money play; the game driver passes each position's stakes, seen by its mover, to
agents that ask for them; by default plays are ranked by cubeless equity."""

import numpy as np
import pytest

from nardy_ai import core, driver
from nardy_ai.agents import make_agent
from nardy_ai.agents.neural import NeuralAgent, cubeful_play_spec, parse_td_spec
from nardy_ai.board import OFF, flip, start_board
from nardy_ai.cube import Stakes, cube_life
from nardy_ai.cubeful import afterstate_values, leaf_values
from nardy_ai.model import NeuralEvaluator, equity, flip_outcomes, save_checkpoint
from nardy_ai.movegen import generate
from nardy_ai.variants import with_options

from movegen_helpers import hand_board

BG = with_options("backgammon", stakes="cube")


class Table:
    """A stand-in evaluator: the outcome probabilities (the mover's, model layout) of chosen
    afterstates by their bytes, ``rest`` for every other one."""

    def __init__(self, v, table: dict[bytes, list[float]], rest: list[float]):
        self.variant = v
        self.table = {k: np.asarray(p, float) for k, p in table.items()}
        self.rest = np.asarray(rest, float)

    def probabilities(self, boards: np.ndarray) -> np.ndarray:
        return np.stack([self.table.get(b.tobytes(), self.rest) for b in np.asarray(boards, np.int8)])


#: The opponent's outcome probabilities (on roll, its view) after two plays: after "too good"
#: it wins 82% with 40% gammons (cubeless: the mover's best play, -0.94), after "cash" 98%
#: without gammons (-0.96).  With the cube centred the opponent on roll is too good to double
#: after the first (it plays on for the gammon: the mover loses more than a stake) and doubles
#: the mover out after the second (one stake): the cubeful order is the reverse.
TOO_GOOD = [0.82, 0.40, 0.0, 0.10, 0.0]
CASH = [0.98, 0.0, 0.0, 0.0, 0.0]
HOPELESS = [1.0, 0.9, 0.5, 0.0, 0.0]


def opening_with_two_plays():
    """The opening 3-1's afterstates, the first two given TOO_GOOD and CASH (as the mover's
    probabilities: flipped), the rest HOPELESS; and the evaluator."""
    after = generate(start_board(BG)[None], np.array([[3, 1]]), BG)
    assert len(after.boards) >= 3
    table = {after.boards[0].tobytes(): flip_outcomes(np.array(TOO_GOOD), BG),
             after.boards[1].tobytes(): flip_outcomes(np.array(CASH), BG)}
    return after, Table(BG, table, flip_outcomes(np.array(HOPELESS), BG))


def test_cubeful_afterstate_values_are_the_opponents_cube_decision_negated():
    """CUBE-1: an afterstate is worth minus the opponent's best of no double and double/take or
    pass at 0 ply (Janowski with its cube life), in units of the stake."""
    after, ev = opening_with_two_plays()
    rows = np.array([0, 1])
    for value, owner in ((1, "centre"), (2, "mover"), (4, "opponent")):
        stakes = Stakes.from_dicts([{"value": value, "owner": owner}] * 2, BG)
        got = afterstate_values(after.boards[rows], stakes, ev, 0, BG)
        opp = flip(after.boards[rows], BG)
        probs = np.array([TOO_GOOD, CASH])
        want = -leaf_values(probs, cube_life(opp, BG), stakes.opponent(), BG)[2] / value
        assert got == pytest.approx(want)
    centred = Stakes.from_dicts([{"value": 1, "owner": "centre"}] * 2, BG)
    got = afterstate_values(after.boards[rows], centred, ev, 0, BG)
    assert got[1] == pytest.approx(-1.0)            # doubled out: one stake lost
    assert got[0] < -1.0                            # too good: played on for the gammon


def test_a_play_that_bears_off_the_last_checker_counts_its_points_at_the_stake():
    """BG-6 at the stake: the last checker off with none of the opponent's off is a gammon,
    2 points a stake; with BG-J and a cube never turned it is 1."""
    b = hand_board({1: 1}, off=14)
    after = generate(b[None], np.array([[6, 5]]), BG)
    done = after.boards[after.boards[:, OFF] == 15]
    assert len(done)
    ev = Table(BG, {}, [0.5, 0.0, 0.0, 0.0, 0.0])
    owned = Stakes.from_dicts([{"value": 2, "owner": "mover", "turned": True}] * len(done), BG)
    assert afterstate_values(done, owned, ev, 0, BG) == pytest.approx(2.0)
    jac = with_options("backgammon", stakes="cube", jacoby=True)
    centred = Stakes.from_dicts([{"value": 1, "owner": "centre"}] * len(done), jac)
    assert afterstate_values(done, centred, ev, 0, jac) == pytest.approx(1.0)


@pytest.mark.parametrize("plies", [0, 1])
def test_with_stakes_the_agent_plays_the_cubeful_best_and_without_them_the_cubeless(plies):
    after, ev = opening_with_two_plays()
    # the precondition: cubeless and cubeful orders of the two plays differ
    cubeless = -equity(np.array([TOO_GOOD, CASH]), BG)
    assert cubeless[0] > cubeless[1]
    agent = NeuralAgent(ev, plies=plies, cubeful_play=True)
    centred = Stakes.from_dicts([{"value": 1, "owner": "centre"}], BG)
    assert agent.plays_cubeful
    if plies == 0:
        assert agent.choose(after, BG, rng()).tolist() == [0]
        assert agent.choose(after, BG, rng(), stakes=centred).tolist() == [1]
    else:                                            # a valid row, searched cubefully
        pick = agent.choose(after, BG, rng(), stakes=centred)
        assert 0 <= pick[0] < len(after.boards)
    off = NeuralAgent(ev, plies=plies)                # the default: cubeless
    assert not off.plays_cubeful
    assert off.choose(after, BG, rng(), stakes=centred).tolist() == agent.choose(after, BG, rng()).tolist()


def rng():
    """The same tie-breaking generator for each call."""
    return np.random.default_rng(0)


class Recorder:
    """A policy that plays the first afterstate and records what the driver gave it."""

    def __init__(self, cubeful: bool):
        self.name = "recorder"
        self.plays_cubeful = cubeful
        self.calls = []

    def choose(self, after, variant, rng, stakes=None):
        self.calls.append((len(after.offsets) - 1, stakes))
        return after.offsets[:-1].copy()


class Plain:
    """A policy with the three-argument ``choose`` of every agent: never given stakes."""
    name = "plain"

    def choose(self, after, variant, rng):
        return after.offsets[:-1].copy()


def test_the_driver_passes_each_positions_stakes_seen_by_its_mover_to_agents_that_ask():
    rng = np.random.default_rng(1)
    games, _ = core.start(BG, 6, rng, stakes="cube")
    rec = Recorder(True)
    out = driver.run(games, driver.SeededDice(rng), (rec, Plain()), rng, plies=12,
                     cube=driver.CubeStage((make_agent("heuristic", BG), make_agent("heuristic", BG))))
    assert rec.calls and out.games.stakes is not None
    for n, stakes in rec.calls:
        assert isinstance(stakes, Stakes) and len(stakes) == n
        assert (stakes.viewer == 0).all()            # white's seat: the mover sees them
    plain = Recorder(False)
    driver.run(core.start(BG, 4, rng, stakes="cube")[0], driver.SeededDice(rng), plain, rng, plies=4)
    assert plain.calls and all(s is None for _, s in plain.calls)
    # without stakes the recorder is not handed any either
    nostakes = Recorder(True)
    driver.run(core.start("backgammon", 4, rng)[0], driver.SeededDice(rng), nostakes, rng, plies=4)
    assert nostakes.calls and all(s is None for _, s in nostakes.calls)


def test_cubefulplay_spec_turns_on_the_cubeful_checker_play(tmp_path):
    net = NeuralEvaluator.create("backgammon", hidden=(8,), seed=3, device="cpu")
    path = tmp_path / "net.pt"
    save_checkpoint(path, {"evaluator": net.state()})
    assert parse_td_spec(f"{path}@1ply+cube2ply+cubefulplay") == (str(path), 1, 2)
    assert cubeful_play_spec(f"{path}+cubefulplay") and not cubeful_play_spec(str(path))
    a = make_agent(f"td:{path}+cube1ply+cubefulplay", BG)
    assert (a.cubeful_play, a.cube_plies, a.plies) == (True, 1, 0)
    assert not make_agent(f"td:{path}", BG).cubeful_play
    assert make_agent(f"td:{path}+pipcube+cubefulplay", BG).cubeful_play


def test_registry_names_carry_cubefulplay():
    from nardy_ai import registry
    spec = registry.resolve("bg-champion+cubefulplay", "backgammon")
    assert spec.endswith("+cube1ply+cubefulplay")
    assert registry.short_name(spec, "backgammon") == "bg-champion+cube1ply+cubefulplay"
    agent = make_agent("bg-champion+cubefulplay", BG)
    assert agent.cubeful_play and agent.cube_plies == 1
    assert not make_agent("bg-champion", BG).cubeful_play
