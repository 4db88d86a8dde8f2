"""The lockstep game runner: opening (COM-7), end and scoring (COM-6, BG-6, BG-TT, LN-7, LN-8),
records (JSON lines, replay against the move generator), reproducibility and statistics."""

import io

import numpy as np
import pytest

from nardy_ai.agents import Agent, HeuristicAgent, RandomAgent
from nardy_ai.errors import FormatError, IllegalPlay
from nardy_ai.game import (GameRecord, GameTooLong, Turn, play_games, read_jsonl, replay,
                           result_levels, result_points, summarize, write_jsonl)
from nardy_ai.variants import VARIANTS, get_variant, with_options

VARIANT_IDS = list(VARIANTS)


# --- scoring: hand-built positions right after the winning play (winner's view) ---------------

def finished(loser: dict[int, int], bar: int = 0, off: int = 0) -> np.ndarray:
    """Winner has borne off 15; ``loser`` maps the winner's point numbers to loser checker counts."""
    b = np.zeros(28, np.int8)
    for point, count in loser.items():
        b[point - 1] = -count
    b[25], b[26], b[27] = bar, 15, off
    assert -b[:24].sum() + bar + off == 15
    return b


@pytest.mark.parametrize("variant", ["backgammon", "short_caucasian"])
@pytest.mark.parametrize("board, expected", [
    (finished({20: 5, 22: 7}, off=3), (1, 1)),                 # BG-6 single: the loser bore off
    (finished({2: 1, 20: 5, 22: 6}, off=3), (1, 1)),           # ... even with a checker in the winner's home
    (finished({19: 8, 24: 7}), (2, 2)),                        # BG-6 gammon: none off, all in its home
    (finished({13: 1, 19: 7, 24: 7}), (2, 2)),                 # gammon: outside its home but not in the winner's
    (finished({6: 1, 19: 7, 24: 7}), (3, 3)),                  # BG-6 backgammon: a checker in the winner's home
    (finished({19: 7, 24: 7}, bar=1), (3, 3)),                 # BG-6 backgammon: a checker on the bar
])
def test_backgammon_results_bg6(variant, board, expected):
    assert result_points(board, variant) == expected


@pytest.mark.parametrize("board, expected", [
    (finished({1: 1, 20: 5, 22: 6}, off=3), (1, 1)),           # BG-TT: win = 1 when the loser bore off
    (finished({19: 8, 24: 7}), (2, 2)),                        # BG-TT 2: none off, all in its home
    (finished({18: 1, 19: 7, 24: 7}), (3, 4)),                 # BG-TT 4: not all in its home
    (finished({3: 1, 19: 7, 24: 7}), (3, 4)),                  # ... in the winner's home is also outside
    (finished({19: 7, 24: 7}, bar=1), (4, 8)),                 # BG-TT 8: moreover on the bar
    (finished({19: 6, 24: 7}, bar=1, off=1), (1, 1)),          # bar does not count once one is off
])
def test_trictrac_results_bgtt(board, expected):
    assert result_points(board, "short_trictrac") == expected


KOKS = with_options("long", koks=True)


@pytest.mark.parametrize("variant, board, expected", [
    ("long", finished({12: 5, 15: 5}, off=5), (1, 1)),         # LN-7 oin
    ("long", finished({12: 15}), (2, 2)),                      # LN-7 mars: none borne off
    ("long", finished({13: 10, 18: 5}), (2, 2)),               # mars with all in its home
    (KOKS, finished({13: 10, 18: 5}), (2, 2)),                 # koks option, all past the winner's 12
    (KOKS, finished({12: 1, 13: 9, 18: 5}), (3, 3)),           # koks: still on its head (winner's 12)
    (KOKS, finished({7: 1, 13: 9, 18: 5}), (3, 3)),            # koks: in its first quarter (winner's 7-12)
    (KOKS, finished({2: 1, 13: 9, 18: 5}), (3, 3)),            # koks: in the winner's home
    (KOKS, finished({2: 1, 13: 9, 18: 4}, off=1), (1, 1)),     # oin once one checker is off
    ("long_dave", finished({12: 15}), (1, 1)),                 # LN-8: no mars with dave, stake 1
    ("long_dave", finished({12: 5, 15: 5}, off=5), (1, 1)),
])
def test_long_results_ln7_ln8(variant, board, expected):
    assert result_points(board, variant) == expected


def test_jacoby_counts_a_gammon_single_while_the_cube_was_never_turned():
    # BG-J: the runner has no cube yet, so every game is played with the cube in the centre.
    v = with_options("backgammon", jacoby=True)
    assert result_points(finished({6: 1, 19: 7, 24: 7}), v) == (3, 1)


def test_result_levels_is_batched_and_result_points_needs_a_finished_game():
    boards = np.stack([finished({19: 8, 24: 7}), finished({20: 5, 22: 7}, off=3)])
    assert result_levels(boards, "backgammon").tolist() == [2, 1]
    b = finished({19: 8, 24: 7})
    b[26], b[5] = 14, 1
    with pytest.raises(ValueError, match="COM-6"):
        result_points(b, "backgammon")


# --- complete games, replayed against the move generator ----------------------------------------

N_GAMES = 32


@pytest.fixture(scope="module")
def games():
    """Recorded games of every variant (and long nardy with koks): random vs random and
    heuristic vs random, with the heuristic white in half of them."""
    out = {}
    for i, v in enumerate([get_variant(x) for x in VARIANT_IDS] + [KOKS]):
        r, h = RandomAgent(), HeuristicAgent()
        out[v.id + (",koks" if v.koks else "")] = {
            "rr": play_games(v, (r, r), N_GAMES, seed=100 + i),
            "hr": play_games(v, (h, r), N_GAMES // 2, seed=200 + i)
                  + play_games(v, (r, h), N_GAMES // 2, seed=300 + i),
        }
    return out


@pytest.mark.parametrize("key", VARIANT_IDS + ["long,koks"])
@pytest.mark.parametrize("matchup", ["rr", "hr"])
def test_complete_games_replay_legally(games, key, matchup):
    records = games[key][matchup]
    v = records[0].rules()
    assert len(records) == N_GAMES
    boards = replay(records)            # raises unless every play is one legal afterstate
    for rec, hist in zip(records, boards):
        assert hist.shape == (rec.plies + 1, 28)
        assert rec.turns[-1].player == rec.winner
        assert 1 <= rec.level <= len(v.scoring) and rec.points == v.scoring[rec.level - 1]
        assert [t.player for t in rec.turns] == [(rec.first + k) % 2 for k in range(rec.plies)]
        # Each side always has 15 checkers (COM).
        side = np.maximum(hist[:, :24], 0).sum(1) + hist[:, 24] + hist[:, 26]
        opp = np.maximum(-hist[:, :24], 0).sum(1) + hist[:, 25] + hist[:, 27]
        assert (side == 15).all() and (opp == 15).all()
        assert hist[-1, 26] == 15 and (hist[:-1, 26] < 15).all() and (hist[:-1, 27] < 15).all()
    if v.is_long:
        assert all((hist[:, 24:26] == 0).all() for hist in boards)   # LN-2: no bar


def test_all_result_levels_occur(games):
    levels = {key: {r.level for m in ("rr", "hr") for r in games[key][m]} for key in games}
    assert levels["backgammon"] == {1, 2, 3}
    assert levels["long"] == {1, 2} and levels["long_dave"] == {1}
    assert {2, 3} <= levels["short_trictrac"] and 3 in levels["long,koks"]


def test_opening_roll_plays_the_lot_numbers_in_short_nardy(games):
    # COM-7: each side rolls one die, ties again; the higher moves first with those numbers.
    for key in ("backgammon", "short_caucasian"):
        for rec in games[key]["rr"] + games[key]["hr"]:
            first = rec.turns[0]
            assert first.dice[0] != first.dice[1]
            assert tuple(first.dice) == tuple(rec.opening[-1])         # white's die first
            assert rec.first == (0 if first.dice[0] > first.dice[1] else 1)
            assert all(a == b for a, b in rec.opening[:-1])            # earlier lots were ties


@pytest.mark.parametrize("variant, doubles_on_move_1", [("backgammon", False), ("long", True)])
def test_move_1_double_only_in_long_nardy(variant, doubles_on_move_1):
    # COM-7: in long nardy the lot winner rolls both dice, so move 1 can be a double.
    r = RandomAgent()
    records = play_games(variant, (r, r), 300, seed=5)
    doubles = sum(rec.turns[0].dice[0] == rec.turns[0].dice[1] for rec in records)
    assert (doubles > 0) == doubles_on_move_1, doubles
    if variant == "long":
        assert 20 < doubles < 80                       # about 1/6 of 300
        for rec in records:
            assert rec.first == (0 if rec.opening[-1][0] > rec.opening[-1][1] else 1)
    assert 0.35 < np.mean([rec.first for rec in records]) < 0.65


def test_trictrac_white_always_moves_first(games):
    # BG-TT: white (player 0) moves first, with a normal roll, no lot.
    records = games["short_trictrac"]["rr"] + games["short_trictrac"]["hr"]
    assert all(rec.first == 0 and rec.turns[0].player == 0 and rec.opening == [] for rec in records)
    assert any(rec.turns[0].dice[0] == rec.turns[0].dice[1] for rec in
               play_games("short_trictrac", (RandomAgent(), RandomAgent()), 100, seed=9))


# --- reproducibility -------------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["backgammon", "long"])
def test_same_seed_same_games(variant):
    h, r = HeuristicAgent(), RandomAgent()
    a = [x.to_json() for x in play_games(variant, (h, r), 16, seed=42)]
    b = [x.to_json() for x in play_games(variant, (h, r), 16, seed=42)]
    c = [x.to_json() for x in play_games(variant, (h, r), 16, seed=43)]
    assert a == b and a != c


def test_agents_do_not_shift_the_dice():
    # The dice of game i at ply k depend on the seed only, not on the plays (duplicate dice).
    rr = play_games("backgammon", (RandomAgent(), RandomAgent()), 16, seed=3)
    hr = play_games("backgammon", (HeuristicAgent(), RandomAgent()), 16, seed=3)
    for a, b in zip(rr, hr):
        k = min(a.plies, b.plies)
        assert a.first == b.first and a.opening == b.opening
        assert [t.dice for t in a.turns[:k]] == [t.dice for t in b.turns[:k]]


def test_record_false_plays_the_same_games_without_turns():
    r = RandomAgent()
    full = play_games("long", (r, r), 8, seed=1)
    bare = play_games("long", (r, r), 8, seed=1, record=False)
    for a, b in zip(full, bare):
        assert (a.winner, a.level, a.points, a.plies, a.first) == (b.winner, b.level, b.points, b.plies, b.first)
        assert b.turns == [] and b.opening == []


# --- records ---------------------------------------------------------------------------------

def test_record_fields_and_json_round_trip(games, tmp_path):
    records = games["long,koks"]["hr"][:3] + games["backgammon"]["hr"][-2:]
    rec = records[0]
    assert (rec.variant, rec.variant_version, rec.options) == ("long", "1", {"koks": True})
    assert {rec.white, rec.black} == {"heuristic", "random"} and rec.game == 0
    line = rec.to_json()
    assert "\n" not in line and GameRecord.from_json(line) == rec
    assert rec.rules().scoring == (1, 2, 3)
    path = tmp_path / "games.jsonl"
    write_jsonl(records[:2], path)
    write_jsonl(records[2:], str(path))                  # appends, keeps what was written
    assert read_jsonl(path) == records
    buf = io.StringIO()
    write_jsonl(records, buf)
    assert read_jsonl(io.StringIO(buf.getvalue())) == records


def test_read_jsonl_names_the_bad_line():
    good = play_games("long", (RandomAgent(), RandomAgent()), 1, seed=0)[0].to_json()
    with pytest.raises(FormatError, match="line 3"):
        read_jsonl(io.StringIO(good + "\n\n{not json\n"))


def test_replay_rejects_a_tampered_record(games):
    rec = GameRecord.from_json(games["backgammon"]["rr"][0].to_json())
    t = rec.turns[0]
    rec.turns[0] = Turn(t.player, t.dice, "24/1")
    with pytest.raises(IllegalPlay, match="turn 1"):
        replay([rec])
    rec = GameRecord.from_json(games["backgammon"]["rr"][0].to_json())
    rec.points += 1
    with pytest.raises(FormatError, match="points"):
        replay([rec])


def test_max_plies_names_the_game():
    with pytest.raises(GameTooLong, match=r"game 0 \(seed 4, long\).*max_plies=10"):
        play_games("long", (RandomAgent(), RandomAgent()), 3, seed=4, max_plies=10)


def test_an_agent_choosing_a_foreign_row_is_refused():
    class Cheat(Agent):
        name = "cheat"

        def choose(self, after, variant, rng):
            return after.offsets[1:].copy()              # one past its own rows

    with pytest.raises(IllegalPlay, match="cheat"):
        play_games("backgammon", (Cheat(), RandomAgent()), 4, seed=0)


# --- statistics ------------------------------------------------------------------------------

def _rec(white, black, winner, points, level=1):
    return GameRecord("backgammon", "1", 0, 0, white, black, 0, winner, level, points, 60)


def test_summarize_counts_from_the_first_agents_side():
    records = [_rec("a", "b", 0, 2, 2), _rec("b", "a", 0, 1), _rec("a", "b", 0, 3, 3), _rec("b", "a", 1, 1)]
    s = summarize(records)
    assert s["agents"] == ["a", "b"] and s["wins"] == [3, 1] and s["games"] == 4
    assert s["points_per_game"] == pytest.approx((2 - 1 + 3 + 1) / 4)
    lo, hi = s["points_per_game_ci95"]
    half = 1.959963984540054 * np.std([2, -1, 3, 1], ddof=1) / 2     # the 97.5 % normal quantile
    assert (lo, hi) == pytest.approx((1.25 - half, 1.25 + half))
    assert s["levels"] == {"1": 2, "2": 1, "3": 1}
    assert s["levels_by_agent"] == [{"1": 1, "2": 1, "3": 1}, {"1": 1}]
    assert summarize(records, "b")["wins"] == [1, 3]
