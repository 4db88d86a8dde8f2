"""Cubeful equity (nardy_ai/cubeful.py, issue #12): the lookahead with both players' cube
decisions inside, checked on last-rolls positions whose values are computed by hand; the
class-dependent cube life; dave's raise and accept values under both progressions (CUBE-D,
LN-8); the agents' plumbing (``@1ply`` decides the cube at 1 ply, ``+pipcube``)."""

from fractions import Fraction

import numpy as np
import pytest

from nardy_ai import cube
from nardy_ai.agents import make_agent
from nardy_ai.agents.neural import NeuralAgent
from nardy_ai.board import OFF, OPP_OFF, flip, mirror_index, start_board
from nardy_ai.classes import class_names, position_classes
from nardy_ai.cube import Stakes, cube_life
from nardy_ai.cubeful import double_equities, node_values, take_equities
from nardy_ai.model import NeuralEvaluator, save_checkpoint
from nardy_ai.movegen import generate
from nardy_ai.search import ROLLS, ROLL_WEIGHTS, cubeless
from nardy_ai.variants import with_options

from movegen_helpers import hand_board

BG = with_options("backgammon", stakes="cube")
DAVE = {p: with_options("long", stakes="dave", dave_progression=p, koks=False)
        for p in ("geometric", "arithmetic")}


def last_checkers(v, mine: int, theirs: int) -> np.ndarray:
    """One checker each, the rest borne off: the player on roll's on its point ``mine``, the
    opponent's on the opponent's own point ``theirs``."""
    b = hand_board({mine: 1}, off=14, opp_off=14)
    b[mirror_index(v)[theirs - 1]] = -1             # the opponent's point in our numbering
    return b


def bear_chance(v, point: int) -> float:
    """Chance that a lone checker on ``point`` is borne off in one roll (from the move
    generator: some afterstate of the roll finishes)."""
    b = hand_board({point: 1}, off=14)
    after = generate(np.repeat(b[None], len(ROLLS), 0), ROLLS, v)
    done = np.add.reduceat((after.boards[:, OFF] == 15).astype(int), after.offsets[:-1]) > 0
    return float(ROLL_WEIGHTS @ done)


class LoneCheckers:
    """A stand-in evaluator for lone-checker races: the mover's win chance after its move is
    1 - (the opponent's chance on roll), where a checker at home counts as certain to come off
    next roll (a simplification the hand computations below share; from the 4-point a 2-1
    fails) and one on the 7-point comes off with :func:`bear_chance`."""

    def __init__(self, v):
        self.variant = v

    def _point_of(self, counts: np.ndarray) -> np.ndarray:
        """The point (1-24, own numbering) of each board's lone checker in ``counts`` (N, 24)."""
        return np.argmax(counts > 0, axis=1) + 1

    def probabilities(self, boards: np.ndarray) -> np.ndarray:
        v = self.variant
        opp_view = flip(boards, v)                     # the opponent, about to roll
        k_opp = self._point_of(opp_view[:, :24])
        k_me = self._point_of(boards[:, :24])
        w = np.array([bear_chance(v, k) if k <= 6 or k == 7 else np.nan for k in range(1, 25)])
        w_opp, w_me = w[k_opp - 1], w[k_me - 1]
        # the opponent on roll wins now, or later when we fail too (ours: home = certain)
        opp_wins = np.where(k_opp <= 6, 1.0, w_opp + (1 - w_opp) * (1 - np.where(k_me <= 6, 1.0, w_me)))
        out = np.zeros((len(boards), len(v.scoring) * 2 - 1))
        out[:, 0] = 1 - opp_wins
        return out


def both_on_seven() -> tuple[np.ndarray, Stakes]:
    """The hand-worked race: each side's last checker on its 7-point (a batch of one board),
    the player on roll with the cube centred at 1."""
    return last_checkers(BG, 7, 7)[None], Stakes.from_dicts([{"value": 1, "owner": "centre"}], BG)


def test_lone_checker_chances_are_the_textbook_ones():
    assert bear_chance(BG, 7) == pytest.approx(23 / 36)           # sum >= 7 or doubles 2-2 and up
    assert bear_chance(BG, 5) == pytest.approx(31 / 36)
    b = last_checkers(BG, 7, 7)
    assert (b[:24] > 0).sum() == 1 and b[6] == 1 and (b[:24] < 0).sum() == 1 and b[OPP_OFF] == 14


def test_two_ply_cubeful_recursion_with_a_redouble_inside_by_hand():
    """Both on their 7-points, the player on roll with a centred cube.  q = 23/36 to bear off.
    No double: win 1 now, else the opponent doubles (its double/take 20/36 beats 10/36) and we
    take: -20/36.  Double/take: win 2 now, else the opponent redoubles to 4 (40/36 beats 20/36)
    and we take: -40/36.  So ND = 568/1296, DT = 1136/1296: double, take."""
    ev = LoneCheckers(BG)
    b, centred = both_on_seven()
    nd, dt, best = node_values(b, centred, ev, 2)
    q = Fraction(23, 36)
    assert nd[0] == pytest.approx(float(q - (1 - q) * 2 * (2 * q - 1)))
    assert dt[0] == pytest.approx(float(2 * q - (1 - q) * 4 * (2 * q - 1)))
    assert best[0] == pytest.approx(dt[0])
    d, eq = double_equities(b, centred, ev, 2)
    assert d.tolist() == [True] and eq[0]["double_take"] == pytest.approx(1136 / 1296)
    # The taker's side of the same decision: the equity after the take is -DT.
    t, teq = take_equities(flip(b, BG), centred.opponent(), ev, 2)
    assert t.tolist() == [True] and teq[0]["take"] == pytest.approx(-1136 / 1296)
    # With the cube owned by the opponent the player may not double: ND only, and the
    # opponent's redouble inside is from 2 to 4.
    theirs = Stakes.from_dicts([{"value": 2, "owner": "opponent"}], BG)
    nd2, dt2, best2 = node_values(b, theirs, ev, 2)
    assert np.isnan(dt2[0]) and best2[0] == nd2[0]
    assert nd2[0] == pytest.approx(float(2 * q - (1 - q) * 4 * (2 * q - 1)))


def test_one_ply_uses_janowski_at_the_leaves_with_the_opponents_cube_decision():
    ev = LoneCheckers(BG)
    b, centred = both_on_seven()
    nd, dt, _ = node_values(b, centred, ev, 1)
    q = 23 / 36
    # The opponent's node after our failure: it is on roll with q, we are home; a race, x by
    # its 7 pips (0.6).  Its leaf value is the better of no double and double/take (Janowski).
    fail = last_checkers(BG, 7, 1)                      # the opponent's view: it on 7, we on 1
    x = cube_life(fail[None], BG)[0]
    assert x == pytest.approx(0.6)
    leaf_nd = cube.janowski_equity(q, 1, 1, x, 0)
    leaf_dt = 2 * cube.janowski_equity(q, 1, 1, x, -1)
    assert nd[0] == pytest.approx(q - (1 - q) * max(leaf_nd, min(leaf_dt, 1.0)))
    # Double/take: the opponent holds the cube at 2 (it may redouble to 4 at its leaf).
    leaf_nd2 = 2 * cube.janowski_equity(q, 1, 1, x, 1)
    leaf_dt2 = 4 * cube.janowski_equity(q, 1, 1, x, -1)
    assert dt[0] == pytest.approx(2 * q - (1 - q) * max(leaf_nd2, min(leaf_dt2, 2.0)))


@pytest.mark.parametrize("progression", ["geometric", "arithmetic"])
def test_dave_raise_and_accept_values_under_both_progressions(progression):
    """CUBE-D, LN-8 in long nardy: the same last-rolls race at the first offer (stake 1, both
    free to offer).  Raising: 1 -> 2; the opponent, failing that, raises again to the stake after
    2 (4 geometric, 3 arithmetic) and we accept.  Dave wins the stake (no mars)."""
    v = DAVE[progression]
    ev = LoneCheckers(v)
    b = last_checkers(v, 7, 7)
    q = bear_chance(v, 7)
    assert 0.5 < q < 0.75                               # an offer that is accepted
    stakes = [1, 2, 4] if progression == "geometric" else [1, 2, 3]
    cubes = Stakes.from_dicts([{"value": 1, "owner": "centre"}], v)
    nd, dt, best = node_values(b[None], cubes, ev, 2)
    s0, s1, s2 = stakes
    # No raise: win s0 now, else the opponent raises to s1 (s1 (2q-1) beats s0 (2q-1)).
    assert nd[0] == pytest.approx(s0 * q - (1 - q) * s1 * (2 * q - 1))
    # Raise and accepted: win s1 now, else the opponent raises to s2 and we accept.
    assert dt[0] == pytest.approx(s1 * q - (1 - q) * s2 * (2 * q - 1))
    d, eq = double_equities(b[None], cubes, ev, 2)
    assert d.tolist() == [True]
    assert eq[0]["double_take"] == pytest.approx(dt[0]) and eq[0]["no_double"] == pytest.approx(nd[0])
    t, teq = take_equities(flip(b[None], v), cubes.opponent(), ev, 2)
    assert t.tolist() == [True] and teq[0]["take"] == pytest.approx(-dt[0])


def test_dave_geometric_and_arithmetic_take_points_differ():
    """Risking 3 to save 2 (arithmetic 2 -> 3) takes down to a lower win chance than risking
    4 (geometric): the dead-cube take points are (1 - 1/r) / 2 = 1/6 and 1/4."""
    tp_a, _ = cube.take_cash_points(1, 1, 0.0, r=1.5)
    tp_g, _ = cube.take_cash_points(1, 1, 0.0, r=2.0)
    assert (tp_a, tp_g) == (pytest.approx(1 / 6), pytest.approx(1 / 4))


def test_cube_life_by_position_class():
    v = with_options("backgammon")
    names = class_names(v)
    contact = start_board(v)
    race = hand_board({8: 10, 6: 5, 20: -15})                       # no contact, not all home
    bearoff = hand_board({1: 8, 2: 7, 19: -15})
    crashed = hand_board({1: 3, 2: 2, 24: 1, 20: -2, 13: -5, 6: -8}, off=9)
    boards = np.stack([contact, race, bearoff, crashed])
    classes = [names[c] for c in position_classes(boards, v)]
    assert classes == ["contact", "race", "bearoff", "crashed"]
    pips = 8 * 10 + 6 * 5
    assert cube_life(boards, v) == pytest.approx([0.68, min(0.7, max(0.6, 0.55 + 0.00125 * pips)), 0.6, 0.68])
    long_v = with_options("long")
    assert cube_life(start_board(long_v)[None], long_v)[0] == pytest.approx(0.68)


def test_agents_decide_the_cube_at_their_depth_and_pipcube_uses_the_pip_rule(tmp_path):
    net = NeuralEvaluator.create("backgammon", hidden=(8,), seed=3, device="cpu")
    boards = np.stack([start_board("backgammon"), hand_board({1: 8, 2: 7, 19: -15})])
    cubes = [{"value": 1, "owner": "centre"}] * 2
    ev = net
    for plies in (0, 1):
        d, eq = NeuralAgent(net, plies=plies).double(boards, cubes, BG)
        nd, dt, _ = node_values(boards, Stakes.from_dicts(cubes, BG), ev, plies)
        assert [e["no_double"] for e in eq] == pytest.approx(nd.tolist())
        assert [e["double_take"] for e in eq] == pytest.approx(dt.tolist())
    path = tmp_path / "net.pt"
    save_checkpoint(path, {"evaluator": net.state()})
    pip = make_agent(f"td:{path}@0ply+pipcube", "backgammon")
    ahead = hand_board({1: 8, 2: 7, 19: -15})                     # 23 pips against 90
    d, _ = pip.double(np.stack([ahead, start_board("backgammon")]), cubes, BG)
    assert d.tolist() == [True, False]                            # the pip rule: races only
    assert pip.choose(generate(ahead[None], np.array([[6, 5]]), BG), BG, np.random.default_rng(0)).shape == (1,)


def test_side_stats_count_duplicate_pairs_won_whatever_the_stakes():
    """Geometric dave can end a game at 2^40: the pairs won and lost (a pair's two games
    summed) with a Wilson interval stay readable where the mean does not."""
    from nardy_ai.stats import side_stats, wilson_interval
    points = np.array([1, -1, 2 ** 40, -2, -1, -1, 4, -2], float)    # pairs: 0, +big, -2, +2
    s = side_stats(points, np.ones(8, int), ("single", "gammon"))
    assert (s["pairs_won"], s["pairs_lost"]) == (2, 1)
    assert s["decided_pairs_won_share"] == pytest.approx(2 / 3)
    assert s["decided_pairs_won_ci95"] == pytest.approx(wilson_interval(2, 3))
    tied = side_stats(np.array([1, -1, 2, -2], float), np.ones(4, int), ("single", "gammon"))
    assert tied["decided_pairs_won_share"] is None and tied["decided_pairs_won_ci95"] is None


def test_cubeful_rollout_truncated_after_one_ply_is_the_one_ply_lookahead():
    """Truncated after the root's roll, the rollout's 36 stratified first rolls are the 1-ply
    lookahead's 36 rolls: the same ND and DT (a lone checker has one play per roll)."""
    from nardy_ai.cube_rollout import cubeful_rollout
    agent = NeuralAgent(LoneCheckers(BG))
    b = np.stack([last_checkers(BG, 7, 7), last_checkers(BG, 7, 5)])
    cubes = Stakes.from_dicts([{"value": 1, "owner": "centre"}, {"value": 2, "owner": "mover"}], BG)
    r = cubeful_rollout(b, cubes, BG, agent, games=36, truncate=1)
    nd, dt, _ = node_values(b, cubes, agent.evaluator, 1)
    assert r.no_double == pytest.approx(nd / cubes.value)
    assert r.double_take == pytest.approx(dt / cubes.value)
    assert np.all(r.double_pass == 1.0)


def test_cubeful_rollout_plays_both_branches_on_the_same_dice():
    """Played out: a game with no cube action after the root's decision scores twice as much
    in the double/take branch as in the no-double branch (the same dice, stake 2 vs 1); the
    first two rolls are stratified, so 1,296 games cover each pair of rolls once."""
    from nardy_ai import cube_rollout
    agent = NeuralAgent(LoneCheckers(BG))
    b, cubes = both_on_seven()
    pts = cube_rollout._play_chunk(b, cubes, BG, agent, 1296, None, 0, np.random.default_rng(0), 100)
    nd, dt = pts[:1296], pts[1296:]
    q = Fraction(23, 36)
    assert (nd == 1).sum() >= 23 * 36 and set(np.abs(nd).tolist()) <= {1.0, 2.0}
    same = np.sign(nd) == np.sign(dt)
    assert same.mean() > 0.99 and np.all(np.abs(dt[same]) >= np.abs(nd[same]))
    r = cube_rollout.cubeful_rollout(b, cubes, BG, agent, games=1296, truncate=None)
    assert r.no_double[0] == pytest.approx(nd.mean()) and r.double_take[0] == pytest.approx(dt.mean())
    assert r.no_double[0] > float(2 * q - 1)            # more than the dead-cube equity: the cube helps


def test_a_long_dave_cube_set_reads_its_stakes_and_scores_agents(tmp_path):
    """A set whose header names dave stakes (own cubeful rollouts as the reference, long
    nardy): its stakes are dave with the next stake of the progression; agents are scored."""
    import json
    from nardy_ai.bench.cube import bench_cube, load_cube_positions
    from nardy_ai.board import board_to_json
    v = DAVE["arithmetic"]
    boards = [last_checkers(v, 7, 7), start_board("long")]
    refs = [{"no_double": 0.3, "double_take": 0.55, "double_pass": 1.0},
            {"no_double": 0.05, "double_take": -0.2, "double_pass": 1.0}]
    lines = [json.dumps({"header": {"set": "cube_positions", "variant": "long", "stakes": "dave-arithmetic",
                                    "version": 1, "positions": 2, "reference": "test"}})]
    lines += [json.dumps(board_to_json(b, cube={"value": val, "owner": own}, reference=r))
              for b, r, (val, own) in zip(boards, refs, [(1, "centre"), (2, "mover")])]
    path = tmp_path / "set.jsonl"
    path.write_text("\n".join(lines) + "\n")
    cset = load_cube_positions("long", str(path))
    views = cset.views()
    assert cset.variant.stakes == "dave" and cset.variant.dave_progression == "arithmetic"
    assert views.kind == "dave" and views.next.tolist() == [2, 3] and views.access.tolist() == [0, 1]
    r = bench_cube(["heuristic", "random"], str(path), variant="long")
    assert [row["agent"] for row in r["rows"]] == ["heuristic", "random"]
    assert r["reference_actions"]["double"] == 1 and r["rows"][1]["all"]["double_decisions"] == 2


def test_under_dave_neural_agents_rank_plays_by_the_win_chance():
    """LN-8: with dave there is no mars, the winner takes the stake, so a long net's plays are
    ranked by 2p - 1, not by its mars-weighted equity (stakes_aware=False keeps the latter)."""
    net = NeuralEvaluator.create("long", hidden=(8,), seed=2, device="cpu")
    probs = np.array([[0.6, 0.0, 0.0], [0.5, 0.4, 0.0]])
    plain = NeuralAgent(net).rank_for(with_options("long")) or cubeless(net)
    dave = NeuralAgent(net).rank_for(DAVE["geometric"])
    legacy = NeuralAgent(net, stakes_aware=False).rank_for(DAVE["geometric"])
    assert plain(probs) == pytest.approx([0.2, 0.4])
    assert dave(probs) == pytest.approx([0.2, 0.0])
    assert legacy is None
    # The cube decisions read the game's stakes too: W = L = 1 under dave whatever the net says.
    b = start_board("long")[None]
    cubes = Stakes.from_dicts([{"value": 1, "owner": "centre"}], DAVE["arithmetic"])
    _, eq = NeuralAgent(net).double(b, cubes, DAVE["arithmetic"])
    p = eq[0]["p"]
    x = cube_life(b, DAVE["arithmetic"])[0]
    assert eq[0]["no_double"] == pytest.approx(cube.janowski_equity(p, 1, 1, x, 0))


def test_a_parent_variants_net_plays_its_family_and_the_default_tournaments_use_it(tmp_path):
    """Issue #15: a variant without nets of its own plays with its parent's (the same family:
    short_caucasian and short_trictrac with backgammon's, long_dave with long's); the net keeps
    its own output layout (the cube reads W and L from it) and another family is refused."""
    from nardy_ai.cubeful import outcome_values
    from nardy_ai.errors import NardyError
    from nardy_ai.tournament.settings import default_agents
    from nardy_ai.variants import get_variant
    bg = NeuralEvaluator.create("backgammon", hidden=(8,), seed=4, device="cpu")
    path = tmp_path / "bg.pt"
    save_checkpoint(path, {"evaluator": bg.state()})
    tt = get_variant("short_trictrac")
    agent = make_agent(f"td:{path}", tt)
    after = generate(start_board(tt)[None], np.array([[3, 1]]), tt)
    assert agent.choose(after, tt, np.random.default_rng(0)).shape == (1,)
    probs = np.array([[0.6, 0.2, 0.05, 0.1, 0.01]])
    assert np.allclose(outcome_values(probs, with_options("short_trictrac", stakes="cube"), bg.variant),
                       cube.win_values(probs, bg.variant))
    assert np.allclose(outcome_values(probs[:, :3], DAVE["geometric"], with_options("long"))[1:], 1.0)
    with pytest.raises(NardyError, match="not 'long'"):
        make_agent(f"td:{path}", "long")
    for v in ("short_caucasian", "short_trictrac", "long_dave"):     # each plays its family's net
        assert make_agent(default_agents(v)[0], v).plies == 0


def test_raised_stakes_follow_the_progression_and_the_holder():
    """CUBE-1 / CUBE-D: after a taken raise the stake is ``next``; the player on roll holds the
    cube (it took) or not (it was the doubler), and its next stake follows the progression."""
    cubes = Stakes.from_dicts([{"value": 2, "owner": "opponent"}], BG)
    r = cubes.raised()
    assert (r.value[0], r.access[0], r.next[0], bool(r.turned[0])) == (4, 1, 8, True)
    dave = Stakes.from_dicts([{"value": 3, "owner": "centre", "next": 4}], DAVE["arithmetic"])
    r = dave.raised(access=-1)
    assert (r.value[0], r.access[0], r.next[0], bool(r.turned[0])) == (4, -1, 5, True)
