"""Hand-built positions for every move-generation rule of RULES.md §0-§2.

Each test or table row (POSITIONS) names its rule id and writes the expected plays out by hand
(in notation, applied to the position by ``movegen_helpers.play``, which checks nothing).  Every
test runs twice: against
the slow reference generator (``tests/reference_movegen.py``) and against the fast one
(``nardy_ai.movegen.generate``), and with the dice in both orders.

Positions are written from the mover's view: ``pos(mover={point: n}, opp={point: n})`` with the
opponent's checkers at the mover's point numbers; checkers not placed are borne off.  Spare
checkers are often parked where they cannot move (e.g. on 24 behind closed points).

Interpretations of ambiguous rules used here (the project's):
- COM-1/2/3: the longest plays win; LN-5 removes plays before that choice.
- BG-HH: a hitter (hit a blot on points 1-6 this turn) may not join own checkers; it may be
  borne off only when no other step for that die exists at that moment.
- LN-4: first turn = all 15 on the head; two may leave only when that plays more of a double.
- LN-5: judged on the final position only.
"""

from __future__ import annotations

import numpy as np
import pytest

from movegen_helpers import GENERATORS, diff_message, play, plays, pos
from nardy_ai.board import flip, start_board

BG, CAU, TT, LONG, DAVE = "backgammon", "short_caucasian", "short_trictrac", "long", "long_dave"


@pytest.fixture(params=["reference", "fast"])
def gen(request):
    return GENERATORS[request.param]


def check(gen, variant, board, dice, *expected_plays):
    """``gen`` must give exactly the afterstates of ``expected_plays`` (none = no play), for
    the dice in both orders."""
    expected = plays(board, *expected_plays)
    for d in {tuple(dice), tuple(dice[::-1])}:
        got = gen(board, d, variant)
        assert got == expected, diff_message(board, d, variant, got, expected)


def case(name, variants, board, dice, *expected_plays):
    """Rows of POSITIONS: in each of ``variants``, ``board`` (mover's view) with ``dice`` has
    exactly the plays ``expected_plays`` (none = no play); the test id is ``name-variant``."""
    return [pytest.param(v, board, dice, expected_plays, id=f"{name}-{v}") for v in variants]


# LN-5: the mover's points 13-18 are the opponent's 1-6; 1-6 are its 13-18; 22,23,24,1,2,3
# are its 10-15.
WALLS = {7: 1, 8: 1, 9: 1, 10: 1, 11: 1}

#: One position, one roll, every legal play written out; each row's comment says why.
POSITIONS = [
    # --- COM-1..COM-4: use as much of the roll as possible
    # COM-1: 24/23 alone is not a play, because 8/7/1 uses both dice.
    *case("com1_both_dice_must_be_played", [BG], pos({24: 1, 8: 1}, {18: 2, 2: 2, 17: 2, 20: 9}), (6, 1),
          "8/7/1"),
    # COM-2: 13/7 or 13/8 but not both (2 is closed): the larger die, 13/7.
    *case("com2_larger_die_when_only_one_plays", [BG], pos({13: 1}, {2: 2, 20: 13}), (6, 5), "13/7"),
    # COM-2: the 6 cannot be played at all (7 closed), so the 5 is played; 8/2 is closed.
    *case("com2_smaller_die_when_larger_cannot_play", [BG], pos({13: 1}, {2: 2, 7: 2, 20: 11}), (6, 5),
          "13/8"),
    # COM-2 with LN-3: one head checker may move; 24/18 or 24/19, neither continues.
    *case("com2_larger_die_long", [LONG], pos({24: 15}, {13: 1, 14: 1, 12: 13}), (6, 5), "24/18"),
    # COM-4 / LN-2: 6-6 from the head with 18 taken by one opponent checker; LN-4 gives nothing.
    *case("com4_no_play_long", [LONG], pos({24: 15}, {18: 1, 12: 14}), (6, 6)),
    # --- COM-5 / LN-6: bearing off
    # COM-5 / LN-6: 6-4 bears off from 6 and 4, or moves 6/2 and bears off the 4 with the 6.
    *case("com5_bear_off_exact_point", [BG], pos({6: 1, 4: 1}, {20: 15}), (6, 4), "6/off 4/off", "6/2 4/off"),
    *case("com5_bear_off_exact_point", [LONG], pos({6: 1, 4: 1}, {14: 15}), (6, 4),
          "6/off 4/off", "6/2 4/off"),
    # COM-5: 6-5 with checkers on 3 and 2 only: both dice bear off from the highest point.
    *case("com5_bear_off_from_highest_point", [BG], pos({3: 1, 2: 1}, {20: 15}), (6, 5), "3/off 2/off"),
    # COM-5: 4-3 with 5 and 2: no bear-off from 2 while 5 is occupied; after 5 moves, yes.
    *case("com5_higher_checker_blocks_bearing_off_lower", [BG], pos({5: 1, 2: 1}, {20: 15}), (4, 3),
          "5/1 2/off", "5/2 2/off"),
    # COM-5: with 3-1 the 3 may bear off from 3 or move 6/3 inside the home.
    *case("com5_move_inside_home_instead", [BG], pos({6: 1, 3: 1}, {20: 15}), (3, 1), "3/off 6/5", "6/3 3/2"),
    # COM-5 / LN-6: with a checker on 8, 2/off is not allowed; 8/2 2/1 is the only play.
    *case("com5_no_bear_off_with_checker_outside_home", [BG], pos({8: 1, 2: 1}, {20: 15}), (6, 1), "8/2 2/1"),
    *case("com5_no_bear_off_with_checker_outside_home", [LONG], pos({8: 1, 2: 1}, {14: 15}), (6, 1),
          "8/2 2/1"),
    # COM-5: the last checker enters the home with one die, the other die bears off.
    *case("com5_bear_off_after_last_checker_comes_home", [BG], pos({7: 1, 3: 1}, {20: 15}), (6, 1),
          "7/6/off", "7/1 3/2"),
    # --- BG-2, BG-4: closed points, blots, entering from the bar
    # BG-2: 12 and 9 are closed; 11 is a blot (hit), 10 own, 8 and 7 empty.
    *case("bg2_closed_blot_own_and_empty_points", [BG],
          pos({13: 1, 10: 1}, {12: 2, 11: 1, 9: 2, 20: 10}), (2, 1),
          "13/11*/10", "10/8/7"),
    # BG-4: 19 is closed so the 1 enters (bar/24), then the 6 moves on: bar/24/18.
    *case("bg4_enter_with_open_die_then_move", [BG], pos({6: 14}, {19: 2, 1: 13}, bar=(1, 0)), (6, 1),
          "bar/24/18"),
    # BG-4: the 1 enters; the 6 has no play (18 closed, no bear-off with a checker out).
    *case("bg4_enter_and_lose_other_die", [BG], pos({6: 14}, {19: 2, 18: 2, 1: 11}, bar=(1, 0)), (6, 1),
          "bar/24"),
    # BG-4: two on the bar, 19 closed: one enters with the 1, the 6 is lost.
    *case("bg4_two_on_bar_one_enters", [BG], pos({6: 13}, {19: 2, 1: 13}, bar=(2, 0)), (6, 1), "bar/24"),
    # BG-4: two on the bar, both dice enter.
    *case("bg4_two_on_bar_both_enter", [BG], pos({6: 13}, {1: 15}, bar=(2, 0)), (6, 1), "bar/19 bar/24"),
    # BG-4 / COM-3: 4-4 with two on the bar: both enter on 21, 17 and 2 are closed.
    *case("bg4_two_on_bar_double_only_two_steps", [BG],
          pos({6: 13}, {17: 2, 2: 2, 1: 11}, bar=(2, 0)), (4, 4),
          "bar/21(2)"),
    # BG-4 / BG-3: the 3 enters hitting the blot on 22, the 6 continues (19 closed).
    *case("bg4_enter_with_hit", [BG], pos({6: 14}, {22: 1, 19: 2, 1: 12}, bar=(1, 0)), (6, 3), "bar/22*/16"),
    # BG-4: after bar/23 (20 closed), the 5 is free for any checker (6/1 is closed).
    *case("bg4_after_entering_any_checker_moves", [BG],
          pos({13: 1, 6: 13}, {20: 2, 1: 2, 12: 11}, bar=(1, 0)), (5, 2),
          "bar/23/18", "bar/23 13/8"),
    # --- BG-HH: no hit-and-hide (short_caucasian)
    # BG-HH: a hitter may move on to an empty point (9/5*/4).
    *case("bghh_hit_then_move_to_empty_point", [BG, CAU],
          pos({24: 12, 9: 1, 3: 2}, {23: 2, 20: 2, 19: 2, 5: 1, 12: 8}), (4, 1),
          "9/5*/4", "9/5* 3/2", "9/8/4"),
    # BG-HH only concerns hits in the home: 11/9*/8 (hit on 9) may join the checkers on 8.
    *case("bghh_hit_outside_home_then_join_allowed", [BG, CAU],
          pos({24: 12, 11: 1, 8: 2}, {23: 2, 22: 2, 21: 2, 9: 1, 12: 8}), (2, 1),
          "11/9*/8", "11/9* 8/7", "8/6 11/10", "8/6 8/7", "8/6/5", "11/10/8"),
    # BG-HH: after 6/2*, bearing the hitter off is the only step for the 2: allowed.
    *case("bghh_hitter_borne_off_when_nothing_else_plays", [BG, CAU],
          pos({6: 1, 1: 2}, {2: 1, 20: 14}), (4, 2),
          "6/2*/off", "6/4/off"),
    # BG-HH: 7/5* 7/5 then the covering (non-hitter) checker goes 5/3/1 onto the checker on 1: legal
    # in both variants, because a step from a point with a hitter may move either.
    *case("bghh_covered_hitter_the_other_checker_moves_on", [BG, CAU],
          pos({24: 12, 7: 2, 1: 1}, {22: 2, 5: 1, 13: 12}), (2, 2),
          "7/5*/3/1 7/5", "7/5*/3 7/5/3"),
    # --- LN-2, LN-3, LN-5: long nardy
    # LN-2: 20/18 is not allowed (one opponent checker on 18), so 20/18/17 does not exist either, but
    # 20/19/17 does.
    *case("ln2_no_landing_on_single_opponent_checker", [LONG], pos({24: 14, 20: 1}, {18: 1, 12: 14}), (2, 1),
          "24/21", "24/22 20/19", "20/17"),
    # LN-3: 24/18 24/19 (two from the head) is not a play.
    *case("ln3_one_checker_from_the_head", [LONG], pos({24: 14, 19: 1}, {12: 15}), (6, 5),
          "24/13", "24/18 19/14", "19/8"),
    # LN-3/LN-4: not a first turn (one checker already off the head), so 6-6 lets one checker leave
    # the head even though a second one would play the fourth six.
    *case("ln3_head_rule_on_a_double_outside_first_turn", [LONG], pos({24: 14, 13: 1}, {12: 15}), (6, 6),
          "24/18 13/1"),
    # LN-5: 8/1 (= 8/2 2/1 or 8/7/1) would hold 1-6 (the opponent's 13-18) with all opponent checkers
    # behind on its head: illegal. The block 2-7 after 8/7 is only intermediate.
    *case("ln5_block_made_by_last_step_is_illegal", [LONG],
          pos({8: 1, 6: 1, 5: 1, 4: 1, 3: 1, 2: 10}, {12: 15}), (6, 1),
          "8/2 6/5", "8/2 5/4", "8/2 4/3", "8/2 3/2"),
    # LN-5: the same with one opponent checker on the mover's 13 (its point 1, ahead of the block):
    # 8/1 is legal.
    *case("ln5_block_legal_with_opponent_checker_ahead", [LONG],
          pos({8: 1, 6: 1, 5: 1, 4: 1, 3: 1, 2: 10}, {13: 1, 12: 14}), (6, 1),
          "8/2 6/5", "8/2 5/4", "8/2 4/3", "8/2 3/2", "8/1"),
    # LN-5: 24/18 is the only step of 6-6 and it would close 13-18 (the opponent's home, no opponent
    # checker can be ahead): all four sixes are lost.
    *case("ln5_dice_lost_because_of_block", [LONG],
          pos({24: 10, 13: 1, 14: 1, 15: 1, 16: 1, 17: 1}, {**WALLS, 12: 10}), (6, 6)),
    # LN-5: a borne-off opponent checker is ahead of every block: 24/18 plays.
    *case("ln5_block_legal_when_opponent_has_borne_off", [LONG],
          pos({24: 10, 13: 1, 14: 1, 15: 1, 16: 1, 17: 1}, {**WALLS, 12: 9}, opp_off=1), (6, 6),
          "24/18"),
    # LN-5 is a long-nardy rule: in backgammon a six-point prime may be built.
    *case("ln5_does_not_apply_to_short_nardy", [BG, CAU, TT],
          pos({8: 1, 6: 1, 5: 1, 4: 1, 3: 1, 2: 10}, {19: 15}), (6, 1),
          "8/2 6/5", "8/2 5/4", "8/2 4/3", "8/2 3/2", "8/1"),
]


@pytest.mark.parametrize("variant, board, dice, expected_plays", POSITIONS)
def test_position(gen, variant, board, dice, expected_plays):
    check(gen, variant, board, dice, *expected_plays)


# --- COM-1..COM-4: use as much of the roll as possible ---------------------------------------

@pytest.mark.parametrize("closed, expected", [
    (1, ("13/4",)),        # three steps play
    (4, ("13/7",)),        # two
    (7, ("13/10",)),       # one
    (10, ()),              # none: COM-4
    (None, ("13/1",)),     # all four
])
def test_com3_doubles_play_as_many_steps_as_possible(gen, closed, expected):
    """COM-3: a lone checker on 13 with 3-3 stops before the closed point."""
    opp = {20: 13} if closed is None else {closed: 2, 20: 11}
    b = pos({13: 1}, opp)
    check(gen, BG, b, (3, 3), *expected)


@pytest.mark.parametrize("walls, expected", [
    ({20: 1, 14: 1, 11: 13}, ("24/22",)),            # one step
    ({20: 1, 12: 14}, ("24/22 16/14",)),             # two
    ({20: 1, 10: 1, 11: 13}, ("24/22 16/12",)),      # three
])
def test_com3_doubles_partial_long(gen, walls, expected):
    """COM-3 in long nardy (with LN-3, one head checker): 2-2 plays 1, 2 or 3 steps."""
    b = pos({24: 14, 16: 1}, walls)
    check(gen, LONG, b, (2, 2), *expected)


def test_com4_no_play_two_on_bar_closed_board(gen):
    """COM-4 / BG-4: both on the bar against a closed home board: the roll is forfeited."""
    b = pos({6: 13}, {19: 2, 20: 2, 21: 2, 22: 2, 23: 2, 24: 2, 1: 3}, bar=(2, 0))
    for dice in [(6, 1), (3, 3), (5, 2)]:
        check(gen, BG, b, dice)


# --- BG-1..BG-5 ---------------------------------------------------------------------------------

def test_bg1_start_position_and_opening_6_5(gen):
    """BG-1: the start position of POSITIONS.md, symmetric under flip; 6-5 has 7 plays
    (24/19 and 6/1 are closed)."""
    b = tuple(int(x) for x in start_board(BG))
    assert b[:24] == (-2, 0, 0, 0, 0, 5, 0, 3, 0, 0, 0, -5, 5, 0, 0, 0, -3, 0, -5, 0, 0, 0, 0, 2)
    assert b[24:] == (0, 0, 0, 0)
    assert tuple(int(x) for x in flip(np.array(b, dtype=np.int8), BG)) == b
    check(gen, BG, b, (6, 5), "24/18 13/8", "24/18 8/3", "24/13", "13/7 13/8", "13/7 8/3",
          "13/2", "8/2 8/3")


def test_bg3_two_hits_in_one_turn(gen):
    """BG-3: 13/10*/9* hits two blots (opponent bar 2); 13/12/9* hits one."""
    b = pos({13: 1}, {10: 1, 9: 1, 20: 13})
    check(gen, BG, b, (3, 1), "13/10*/9*", "13/12/9*")
    assert play(b, "13/10*/9*")[25] == 2


def test_bg5_one_checker_needs_open_intermediate_point(gen):
    """BG-5: 13/2 is open but 7 and 8 are closed, so neither 13/7 nor 13/8 starts it."""
    b = pos({13: 1}, {7: 2, 8: 2, 20: 11})
    check(gen, BG, b, (6, 5))
    b = pos({13: 1}, {8: 2, 20: 13})
    check(gen, BG, b, (6, 5), "13/7/2")


# --- BG-HH: no hit-and-hide (short_caucasian) ----------------------------------------------

PARK_42 = {22: 2, 20: 2, 18: 2}          # 24 cannot move with 4, 2 or 6


def test_bghh_hit_then_join_own_forbidden(gen):
    """BG-HH: 9/5*/3 (hit in the home, then join the own checkers on 3) is legal in backgammon
    but not in short_caucasian."""
    b = pos({24: 12, 9: 1, 3: 2}, {**PARK_42, 5: 1, 12: 8})
    check(gen, BG, b, (4, 2), "9/5* 3/1", "9/5*/3", "9/7/3")
    check(gen, TT, b, (4, 2), "9/5* 3/1", "9/5*/3", "9/7/3")
    check(gen, CAU, b, (4, 2), "9/5* 3/1", "9/7/3")


def test_bghh_hit_and_cover(gen):
    """BG-HH: another checker may cover the hitter (9/5* 7/5); the hitter may not go on to join
    the checker on 1 (7/5*/1), though 7/3/1 without a hit is fine."""
    b = pos({24: 12, 9: 1, 7: 1, 1: 1}, {**PARK_42, 5: 1, 12: 8})
    common = ("9/5*/3", "9/5* 7/5", "7/3 9/7", "7/3/1")
    check(gen, BG, b, (4, 2), *common, "7/5*/1")
    check(gen, CAU, b, (4, 2), *common)


def test_bghh_hitter_borne_off_only_when_no_other_step(gen):
    """BG-HH: after 6/2*, the 2 could bear the hitter off, but 3/1 is another step for that
    die, so short_caucasian forbids 6/2*/off; backgammon allows it."""
    b = pos({6: 1, 3: 1, 1: 2}, {2: 1, 20: 14})
    check(gen, BG, b, (4, 2), "6/2* 3/1", "6/2*/off", "6/4/off")
    check(gen, CAU, b, (4, 2), "6/2* 3/1", "6/4/off")


def test_bghh_lone_hitter_loses_dice(gen):
    """BG-HH: a lone checker 7/5*/3 may not go on to 1 (own checker) in short_caucasian: the
    other two steps are lost.  Backgammon plays 7/5*/3/1."""
    b = pos({24: 13, 7: 1, 1: 1}, {22: 2, 5: 1, 13: 12})
    check(gen, BG, b, (2, 2), "7/5*/3/1")
    check(gen, CAU, b, (2, 2), "7/5*/3")


# --- LN-1..LN-6: long nardy -----------------------------------------------------------------

@pytest.mark.parametrize("variant", [LONG, DAVE])
def test_ln1_start_position_and_opening(gen, variant):
    """LN-1: all 15 on the head, the opponent's head on the mover's 12; 6-5 plays 24/13 only
    (LN-3: one checker from the head)."""
    b = tuple(int(x) for x in start_board(variant))
    assert b[:24] == (0,) * 11 + (-15,) + (0,) * 11 + (15,)
    assert tuple(int(x) for x in flip(np.array(b, dtype=np.int8), variant)) == b
    check(gen, variant, b, (6, 5), "24/13")


@pytest.mark.parametrize("variant", [LONG, DAVE])
@pytest.mark.parametrize("dice, expected", [
    ((6, 6), ("24/18(2)",)),                 # 18/12 is the opponent's head
    ((4, 4), ("24/16(2)",)),                 # 16/12 likewise
    ((3, 3), ("24/21 24/15", "24/18(2)")),   # 15/12 likewise
    ((5, 5), ("24/4",)),                     # one checker plays it all: no exception
    ((2, 2), ("24/16",)),
    ((1, 1), ("24/20",)),
])
def test_ln4_first_mover_doubles(gen, variant, dice, expected):
    """LN-4: the first mover's 6-6, 4-4 and 3-3 take two checkers from the head, never more."""
    check(gen, variant, tuple(int(x) for x in start_board(variant)), dice, *expected)


@pytest.mark.parametrize("dice, expected", [
    ((5, 5), ("24/14(2)",)),                 # 14/9 is the opponent's checker from 24/21
    ((6, 6), ("24/18(2)",)),
    ((4, 4), ("24/16(2)",)),
    ((3, 3), ("24/21 24/15", "24/18(2)")),
    ((2, 2), ("24/16",)),
    ((1, 1), ("24/20",)),
])
def test_ln4_second_mover_after_24_21(gen, dice, expected):
    """LN-4: after the opponent's 24/21 (its 21 is the mover's 9), 5-5 is 24/19/14 twice."""
    b = pos({24: 15}, {12: 14, 9: 1})
    after_opponent = tuple(int(x) for x in flip(np.array(
        play(pos({24: 15}, {12: 15}), "24/21"), dtype=np.int8), LONG))
    assert after_opponent == b
    check(gen, LONG, b, dice, *expected)


@pytest.mark.parametrize("opp_off", [0, 1])
def test_ln5_judged_at_end_of_play(gen, opp_off):
    """LN-5: 24/18/13 is legal though 13-18 is held after its first step; 24/18 23/18 ends
    holding 13-18 and is legal only when an opponent checker is ahead (borne off)."""
    b = pos({24: 9, 23: 1, 13: 1, 14: 1, 15: 1, 16: 1, 17: 1}, {**WALLS, 12: 10 - opp_off},
            opp_off=opp_off)
    expected = ["24/13", "23/17 24/19"] + (["24/18 23/18"] if opp_off else [])
    check(gen, LONG, b, (6, 5), *expected)


@pytest.mark.parametrize("ahead", [False, True])
def test_ln5_block_across_the_mover_24_to_1(gen, ahead):
    """LN-5: the mover's 22, 23, 24, 1, 2, 3 are the opponent's 10-15 (a block across the
    mover's head).  20/14 8/3 ends holding all six: illegal unless an opponent checker stands
    on its points 1-9 (here on the mover's 21)."""
    opp = {12: 5, 11: 5, 10: 5}
    if ahead:
        opp = {12: 5, 11: 5, 10: 4, 21: 1}
    b = pos({24: 1, 23: 1, 22: 1, 20: 1, 8: 1, 2: 6, 1: 4}, opp)
    legal = ["24/18 23/18", "24/18 22/17", "24/13", "24/18 8/3", "23/17 24/19", "23/17 22/17",
             "23/17 8/3", "22/16 24/19", "22/16 23/18", "22/16 8/3", "8/2 24/19", "8/2 23/18",
             "8/2 22/17", "20/14 24/19", "20/14 23/18", "20/14 22/17", "20/15 24/18",
             "20/15 23/17", "20/15 22/16", "20/15 8/2", "20/9"]
    check(gen, LONG, b, (6, 5), *legal, *(["20/14 8/3"] if ahead else []))
