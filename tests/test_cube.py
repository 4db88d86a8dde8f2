"""Stakes (nardy_ai/cube.py and the cube stage of the game runner): CUBE-1, BG-B, BG-J, BG-M,
CUBE-D, LN-8 with hand-built sequences; Janowski's cubeful equity; bot cube decisions on clear
positions; tournaments with stakes."""

from dataclasses import replace

import numpy as np
import pytest

from nardy_ai import cube
from nardy_ai import tournament as tm
from nardy_ai.agents import HeuristicAgent, make_agent
from nardy_ai.agents.base import Agent
from nardy_ai.agents.neural import NeuralAgent
from nardy_ai.board import flip, start_board
from nardy_ai.cli import main
from nardy_ai.cube import CENTRE, NOBODY, Stakes, apply, may_double
from nardy_ai.errors import FormatError, IllegalCubeAction, UnknownOption
from nardy_ai.game import GameRecord, play_games, read_jsonl, replay
from nardy_ai.model import NeuralEvaluator
from nardy_ai.variants import parse_variant_spec, with_options

BG = with_options("backgammon", stakes="cube")


def new(v=BG):
    """One game's stakes at the start (a batch of one)."""
    return Stakes.start(v, 1)


def run(state, *steps):
    for player, action in steps:
        state = apply(state, player, action)
    return state


def one(s):
    """The one game's ``(value, owner, offer, beavered, turned, autos, winner)`` as ints."""
    return {k: int(getattr(s, k)[0]) for k in ("value", "owner", "offer", "beavered", "turned", "autos", "winner")}


def game_points(s, level, v):
    return int(cube.game_points(s, [level], v)[0])


# --- the rules as data ----------------------------------------------------------------------

def test_cube_1_double_take_pass_and_access():
    s = run(new(), (0, "double"), (1, "take"))
    assert (one(s)["value"], one(s)["owner"], one(s)["turned"]) == (2, 1, True)
    with pytest.raises(IllegalCubeAction, match="CUBE-1.*owns the cube"):
        apply(s, 0, "double")                             # only the owner may redouble
    s = run(s, (1, "double"), (0, "take"), (0, "double"), (1, "take"))
    assert (one(s)["value"], one(s)["owner"]) == (8, 1)   # no limit on redoubles
    s = run(s, (1, "double"), (0, "pass"))
    assert (one(s)["winner"], one(s)["value"]) == (1, 8)  # a pass loses the current stake
    with pytest.raises(IllegalCubeAction, match="CUBE-1"):
        apply(s, 0, "double")
    pending = apply(new(), 1, "double")                   # from the centre either player may double
    for player, action in ((1, "take"), (1, "pass"), (0, "double"), (1, "double")):
        with pytest.raises(IllegalCubeAction, match="CUBE-1"):
            apply(pending, player, action)
    with pytest.raises(IllegalCubeAction, match="CUBE-1"):
        apply(new(), 0, "take")                           # nothing to answer
    with pytest.raises(IllegalCubeAction, match="CUBE-1.*unknown cube action"):
        apply(pending, 0, "redouble")


def test_a_batch_checks_every_game_and_names_the_one_that_breaks_the_rule():
    """A single game is a batch of one: the same checks over many games at once, each game's
    own player; an illegal action in one game refuses the whole call and names that game."""
    s = Stakes.start(BG, 3)
    s = apply(s, [0, 1, 0], "double")
    s = apply(s, 1, "take", [0, 2])                       # game 1's raise is still pending
    assert s.value.tolist() == [2, 1, 2] and s.owner.tolist() == [1, CENTRE, 1]
    assert s.offer.tolist() == [NOBODY, 1, NOBODY]
    assert may_double(s, [0, 0, 1]).tolist() == [False, False, True]
    with pytest.raises(IllegalCubeAction, match=r"CUBE-1: player 0 may not double.*owns the cube \(game 0\)"):
        apply(s, [1, 0], "double", [2, 0])                # legal in game 2, not in game 0
    assert s.offer.tolist() == [NOBODY, 1, NOBODY]        # the stakes given are unchanged
    s = apply(s, 0, "pass", [1])
    assert s.winner.tolist() == [NOBODY, 1, NOBODY] and not may_double(s, 1, [1])[0]


def test_bg_b_beaver_keeps_the_cube_and_the_doubler_takes_or_passes_at_the_new_value():
    with pytest.raises(IllegalCubeAction, match="BG-B.*off"):
        run(new(), (0, "double"), (1, "beaver"))
    v = with_options(BG, beaver=True)
    s = run(new(v), (0, "double"), (1, "beaver"))
    assert (one(s)["value"], one(s)["owner"], one(s)["offer"], one(s)["beavered"]) == (2, 1, 1, True)
    with pytest.raises(IllegalCubeAction, match="BG-B"):
        apply(s, 0, "beaver")                             # no beaver of a beaver
    taken = apply(s, 0, "take")
    assert (one(taken)["value"], one(taken)["owner"]) == (4, 1)   # the beaverer keeps the cube
    with pytest.raises(IllegalCubeAction, match="CUBE-1"):
        apply(taken, 0, "double")
    passed = apply(s, 0, "pass")
    assert (one(passed)["winner"], one(passed)["value"]) == (1, 2)


def test_bg_j_jacoby_counts_gammons_single_while_the_cube_was_never_turned():
    v = with_options(BG, jacoby=True)
    assert [game_points(new(v), lv, v) for lv in (1, 2, 3)] == [1, 1, 1]
    turned = run(new(v), (0, "double"), (1, "take"))
    assert [game_points(turned, lv, v) for lv in (1, 2, 3)] == [2, 4, 6]
    assert [game_points(turned, lv, BG) for lv in (1, 2, 3)] == [2, 4, 6]
    assert game_points(new(), 3, BG) == 3
    auto = apply(new(with_options(v, murphy_cap=1)), -1, "auto")
    assert game_points(auto, 2, v) == 2                   # an automatic double turns no cube


def test_bg_m_automatic_doubles_with_their_cap():
    v = with_options(BG, murphy_cap=2)
    s = run(new(v), (-1, "auto"), (-1, "auto"))
    assert (one(s)["value"], one(s)["owner"], one(s)["autos"]) == (4, CENTRE, 2)  # the cube stays in the middle
    with pytest.raises(IllegalCubeAction, match="BG-M"):
        apply(s, -1, "auto")
    with pytest.raises(IllegalCubeAction, match="BG-M"):
        apply(new(), -1, "auto")                          # the option is off
    assert one(run(s, (1, "double"), (0, "take")))["value"] == 8


def test_bg_m_in_the_runner_one_automatic_double_per_equal_lot_up_to_the_cap():
    # Seed 6 has games with 1, 2 and 3 equal lots among 40; the doubler's first raise is passed.
    agents = (Scripted("d"), Scripted("p", double=False, answer="pass"))
    for cap in (1, 2):
        v = with_options("backgammon", murphy_cap=cap)
        recs = play_games(v, agents, 40, seed=6, stakes="cube")
        capped = 0
        for r in recs:
            ties = sum(a == b for a, b in r.opening)
            autos = [c for c in r.cube if c[2] == "auto"]
            assert len(autos) == min(ties, cap)
            assert [c[3] for c in autos] == [2 ** (k + 1) for k in range(len(autos))]
            assert r.stake == 2 ** len(autos) and r.points == r.stake and r.passed
            capped += ties > cap
        assert capped
        replay(recs)


def test_cube_d_dave_alternates_and_grows_geometrically_or_arithmetically():
    for prog, values in (("geometric", [2, 4, 8, 16]), ("arithmetic", [2, 3, 4, 5])):
        v = with_options("long_dave", dave_progression=prog)
        s = new(v)
        assert (s.kind, s.progression, one(s)["owner"]) == ("dave", prog, CENTRE)
        got, offerer = [], 1                             # at the start either may offer
        for _ in values:
            if one(s)["owner"] == CENTRE:
                assert may_double(s, 0)[0] and may_double(s, 1)[0]
            else:
                assert may_double(s, offerer)[0] and not may_double(s, 1 - offerer)[0]
                with pytest.raises(IllegalCubeAction, match="CUBE-D.*other player"):
                    apply(s, 1 - offerer, "double")
            s = run(s, (offerer, "double"), (1 - offerer, "take"))
            got.append(one(s)["value"])
            offerer = 1 - offerer                         # after a raise only the other may offer
        assert got == values
        refused = run(s, (offerer, "double"), (1 - offerer, "pass"))
        assert (one(refused)["winner"], one(refused)["value"]) == (offerer, values[-1])
        with pytest.raises(IllegalCubeAction, match="BG-B"):
            run(new(v), (0, "double"), (1, "beaver"))
        with pytest.raises(IllegalCubeAction, match="BG-M"):
            apply(replace(new(v), murphy_cap=3), -1, "auto")     # not with dave, whatever the cap


def test_ln_8_no_mars_with_dave_the_winner_takes_the_stake():
    for name in ("long_dave", "backgammon"):
        v = cube.stakes_variant(name, "dave-arithmetic")
        s = run(new(v), (0, "double"), (1, "take"), (1, "double"), (0, "take"))
        assert one(s)["value"] == 3 and [game_points(s, lv, v) for lv in (1, 2, 3)] == [3, 3, 3]
    assert cube.stakes_variant("long", "dave-geometric").scoring == (1, 2)
    assert cube.stakes_variant(with_options("long", koks=True), "dave").koks is False


def test_stakes_are_validated():
    with pytest.raises(UnknownOption, match="stakes"):
        cube.stakes_variant("backgammon", "doubling")
    with pytest.raises(UnknownOption, match="LN-8"):
        cube.stakes_variant("long_dave", "cube")
    with pytest.raises(UnknownOption, match="dave_progression"):
        parse_variant_spec("long_dave,dave_progression=harmonic")
    assert parse_variant_spec("long_dave,dave_progression=arithmetic").dave_progression == "arithmetic"
    assert cube.stakes_variant("backgammon", None) is cube.stakes_variant("backgammon", "none")


# --- the runner -----------------------------------------------------------------------------

class Scripted(Agent):
    """Plays the first afterstate; doubles whenever it may while the stake is below ``limit``
    and answers ``answer`` (take / pass / beaver)."""

    def __init__(self, name, double=True, answer="take", limit=64):
        self.name, self.doubles, self.answer, self.limit = name, double, answer, limit

    def choose(self, after, variant, rng):
        return after.offsets[:-1].copy()

    def double(self, boards, cubes, variant):
        return np.array([self.doubles and c["value"] < self.limit for c in cubes], bool), None

    def take(self, boards, cubes, variant):
        return np.full(len(boards), self.answer != "pass"), None

    def beaver(self, boards, cubes, variant):
        return np.full(len(boards), self.answer == "beaver"), None


def test_runner_none_is_todays_game_and_cube_actions_never_shift_the_dice():
    a, b = HeuristicAgent(), make_agent("pubeval", "backgammon")
    plain = play_games("backgammon", (a, b), 12, seed=4)
    assert [r.to_json() for r in plain] == [r.to_json() for r in
                                           play_games("backgammon", (a, b), 12, seed=4, stakes="none")]
    assert "stake" not in plain[0].to_json()
    staked = play_games("backgammon", (a, b), 12, seed=4, stakes="cube")
    assert any(r.cube for r in staked)
    for p, s in zip(plain, staked):
        # The dice of game i at ply k are the same; the plays may differ once games of the batch
        # end at other plies (random tie-breaks are drawn over the running games).
        assert [t.dice for t in s.turns][:p.plies] == [t.dice for t in p.turns][:s.plies]
        if not s.passed:
            assert s.points == s.stake * s.level          # backgammon: 1, 2, 3 times the stake
    replay(staked)
    back = [GameRecord.from_json(r.to_json()) for r in staked]
    assert back == staked


def test_runner_doubles_alternate_and_a_pass_ends_the_game():
    v = "backgammon"
    recs = play_games(v, (Scripted("d"), Scripted("p", double=False, answer="pass")), 6, seed=2,
                      stakes="cube")
    for r in recs:
        # White doubles before its first roll after the opening (never on the lot roll, COM-7).
        assert r.passed and r.points == 1 and r.stake == 1
        assert r.winner == 0 and r.cube[0][1:] == [0, "double", 1] and r.cube[1][1:] == [1, "pass", 1]
        assert r.cube[0][0] == (1 if r.first == 1 else 2)
        assert len(r.turns) == r.plies == r.cube[0][0]
    replay(recs)
    recs = play_games(v, (Scripted("d"), Scripted("t")), 4, seed=2, stakes="cube", max_plies=3000)
    for r in recs:
        doubles = [c for c in r.cube if c[2] == "double"]
        assert [c[1] for c in doubles] == [(doubles[0][1] + k) % 2 for k in range(len(doubles))]
        assert r.stake == 2 ** len(doubles) == 64 and not r.passed
    replay(recs)
    tampered = GameRecord.from_json(recs[0].to_json())
    tampered.cube[2][1] = tampered.cube[0][1]            # the same player doubles twice in a row
    with pytest.raises(IllegalCubeAction, match="CUBE-1"):
        replay([tampered])
    tampered = GameRecord.from_json(recs[0].to_json())
    tampered.stake *= 2
    with pytest.raises(FormatError, match="stake"):
        replay([tampered])
    tampered = GameRecord.from_json(recs[0].to_json())
    tampered.cube[0][1] = "white"                         # a player that is not 0, 1 (or -1: auto)
    with pytest.raises(FormatError, match="cube entry"):
        replay([tampered])


def test_runner_dave_arithmetic_and_the_first_offer_in_long_nardy():
    recs = play_games("long_dave", (Scripted("d"), Scripted("t")), 3, seed=1, stakes="dave-arithmetic",
                      max_plies=3000)
    for r in recs:
        takes = [c for c in r.cube if c[2] == "take"]
        assert r.stakes == "dave-arithmetic" and r.stake == len(takes) + 1 == 64
        assert [c[3] for c in takes] == list(range(2, len(takes) + 2))
        assert r.cube[0][:3] == [0, r.first, "double"]    # long nardy: an offer before the first roll
        assert r.level == 1 and r.points == r.stake       # LN-8
    replay(recs)
    geo = play_games("long", (Scripted("d"), Scripted("p", False, "pass")), 2, seed=1, stakes="dave-geometric")
    assert all(r.passed and r.plies == r.first and r.points == 1 for r in geo)
    replay(geo)


def test_runner_beaver_then_the_doubler_takes_at_four():
    v = with_options("backgammon", beaver=True)
    recs = play_games(v, (Scripted("d"), Scripted("b", double=False, answer="beaver")), 3, seed=6,
                      stakes="cube")
    for r in recs:
        assert [c[2:] for c in r.cube[:3]] == [["double", 1], ["beaver", 2], ["take", 4]]
        assert [c[1] for c in r.cube[:3]] == [0, 1, 0]
        assert r.stake == 4 and len(r.cube) == 3          # the beaverer keeps the cube and never doubles
    replay(recs)


# --- cubeful equity -------------------------------------------------------------------------

def test_janowski_take_and_cash_points():
    tp, cp = cube.take_cash_points(1, 1, 1.0)
    assert (tp, cp) == (pytest.approx(0.2), pytest.approx(0.8))       # live cube
    tp, cp = cube.take_cash_points(1, 1, 0.0)
    assert (tp, cp) == (pytest.approx(0.25), pytest.approx(0.75))     # dead cube
    tp, _ = cube.take_cash_points(1, 1, 0.0, r=1.5)
    assert tp == pytest.approx(1 / 6)                     # arithmetic dave 2 -> 3: risk 1.5 to save 1
    e = cube.janowski_equity([0.2, 0.8, 0.5, 0.0, 1.0], 1, 1, 1.0, [0, 0, 0, 0, 0])
    assert e == pytest.approx([-1, 1, 0, -1, 1])
    assert cube.janowski_equity(0.8, 1, 1, 1.0, 1) == pytest.approx(1.0)
    assert cube.janowski_equity(0.2, 1, 1, 1.0, -1) == pytest.approx(-1.0)
    assert cube.janowski_equity(0.6, 1.2, 1.1, 0.0, 0) == pytest.approx(0.6 * 2.3 - 1.1)


def race_position(my_pips_far_behind: bool) -> np.ndarray:
    """A race seen by the player deciding: 15 checkers on its 1-2 points (23 pips) against the
    opponent's 15 on its 6-point (90), or, far behind, 15 on its 6-point against the opponent's
    8 on its 6-point and 7 on its 1-point (55)."""
    b = np.zeros(28, np.int8)
    if my_pips_far_behind:
        b[5], b[18], b[23] = 15, -8, -7                 # opponent on its points 6 and 1
    else:
        b[0], b[1], b[18] = 8, 7, -15                   # me on 1-2; the opponent on its 6-point
    return b


class PipEvaluator:
    """A stand-in evaluator: outcome probabilities from the pip-count race formula (no gammons)."""

    def __init__(self, variant="backgammon"):
        self.variant = with_options(variant)

    def probabilities(self, boards):
        p = cube.race_win_chance(boards, self.variant, on_roll=False)
        out = np.zeros((len(boards), 5))
        out[:, 0] = p
        return out


@pytest.mark.parametrize("agent", ["neural", "heuristic", "pubeval"])
def test_a_bot_far_ahead_in_a_race_doubles_and_the_opponent_passes(agent):
    bot = {"neural": lambda: NeuralAgent(PipEvaluator()), "heuristic": HeuristicAgent,
           "pubeval": lambda: make_agent("pubeval", "backgammon")}[agent]()
    ahead = race_position(False)
    centred = [{"value": 1, "owner": "centre"}]
    d, _ = bot.double(ahead[None], centred, BG)
    assert d.tolist() == [True]
    t, _ = bot.take(flip(ahead[None], BG), [{"value": 1, "owner": "centre"}], BG)
    assert t.tolist() == [False]
    d, _ = bot.double(start_board("backgammon")[None], centred, BG)
    assert d.tolist() == [False]                          # no double in the opening position
    t, _ = bot.take(start_board("backgammon")[None], centred, BG)
    assert t.tolist() == [True]


def test_neural_cube_decisions_give_the_three_equities_at_0_and_1_ply():
    ev = NeuralEvaluator.create("backgammon", hidden=(8,), seed=1, device="cpu")
    boards = np.stack([start_board("backgammon"), race_position(False)])
    cubes = [{"value": 1, "owner": "centre"}, {"value": 2, "owner": "mover"}]
    for plies in (0, 1):
        agent = NeuralAgent(ev, plies=plies)
        d, eq = agent.double(boards, cubes, BG)
        assert d.shape == (2,) and set(eq[0]) == {"no_double", "double_take", "double_pass", "p"}
        assert d.tolist() == [min(e["double_take"], 1.0) > e["no_double"] for e in eq]
        t, eq = agent.take(boards, cubes, BG)
        assert t.tolist() == [e["take"] >= -1 for e in eq]
    # BG-B: a neural taker far ahead (the doubler's mistake) beavers, one far behind does not; in
    # the opening position owning the cube is worth more than the doubler's small edge (Janowski).
    pip = NeuralAgent(PipEvaluator())
    positions = np.stack([race_position(False), race_position(True), start_board("backgammon")])
    b, eq = pip.beaver(positions, cubes[:1] * 3, BG)
    assert b.tolist() == [True, False, True] and [e["take"] > 0 for e in eq] == b.tolist()
    # Arithmetic dave: the raise 1 -> 2 and 2 -> 3 are weighed by their own ratio.
    _, e2 = NeuralAgent(PipEvaluator()).take(boards[:1], [{"value": 2, "owner": "centre", "next": 3}], BG)
    _, e1 = NeuralAgent(PipEvaluator()).take(boards[:1], [{"value": 2, "owner": "centre"}], BG)
    assert abs(e2[0]["take"]) < abs(e1[0]["take"])


# --- tournaments ----------------------------------------------------------------------------

@pytest.mark.parametrize("stakes,variant", [("cube", "backgammon,beaver=true,jacoby=true"),
                                            ("dave-arithmetic", "long")])
def test_tournament_with_stakes_balances_and_counts_cube_actions(tmp_path, stakes, variant):
    cfg = tm.TournamentConfig(variant, ("heuristic", "random"), 8, 3, False, 4, stakes)
    lines = []
    summary = tm.run_tournament(cfg, tmp_path / "t", progress=False, log=lines.append)
    assert summary["stakes"] == stakes
    records = tm.read_games(tmp_path / "t" / tm.GAMES_FILE)
    replay(list(records.values()))
    a, b = summary["ranking"][0], summary["ranking"][1]
    assert a["points_per_game"] == pytest.approx(-b["points_per_game"])
    assert a["points_won"] == b["points_lost"] and a["points_lost"] == b["points_won"]
    assert sum(r.stake for r in records.values()) / 8 == pytest.approx(a["cube"]["mean_stake"])
    heur = next(r for r in summary["ranking"] if r["agent"] == "heuristic")["cube"]
    rand = next(r for r in summary["ranking"] if r["agent"] == "random")["cube"]
    assert heur["doubles"] == rand["doubles_received"] == rand["takes"] + rand["passes"] + rand["beavers"]
    assert rand["doubles"] == 0                           # no cube logic: never doubles, always takes
    assert "Stakes (" in "\n".join(lines)
    assert not (tmp_path / "t" / tm.MATCH_DIR).exists() or not any((tmp_path / "t" / tm.MATCH_DIR).iterdir())


def test_the_command_takes_stakes(tmp_path, capsys):
    out = str(tmp_path / "t")
    assert main(["tournament", "--variant", "backgammon", "--agents", "heuristic", "pubeval", "--games", "4",
                 "--stakes", "cube", "--out", out, "--no-progress"]) == 0
    assert "Stakes (cube)" in capsys.readouterr().out
    assert main(["tournament", "--variant", "backgammon", "--out", out, "--resume", "--no-progress",
                 "--stakes", "none"]) == 2
    assert "--stakes" in capsys.readouterr().err
    jsonl = tmp_path / "games.jsonl"
    assert main(["play", "--variant", "long", "--agents", "heuristic", "random", "--games", "4",
                 "--stakes", "dave-arithmetic", "--jsonl", str(jsonl), "--json"]) == 0
    recs = read_jsonl(jsonl)
    assert {r.stakes for r in recs} == {"dave-arithmetic"} and all(r.points == r.stake for r in recs)
