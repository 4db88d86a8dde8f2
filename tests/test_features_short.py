"""Expert features of the backgammon family (features_short.py) and the ``expert`` encoder.

Boards are afterstates from the mover's view (the opponent rolls next); points are the mover's
numbers unless a comment says "opponent's point".  Every expected value is counted by hand in
the comment next to it.
"""

import numpy as np
import pytest

from feature_helpers import assert_features
from movegen_helpers import hand_board
from reference_movegen import _candidates
from nardy_ai import features_short as fs
from nardy_ai.bench.positions import random_positions
from nardy_ai.board import OPP_BAR, flip
from nardy_ai.encoding import ENCODERS, encode_tdgammon, get_encoder
from nardy_ai.features_short import COLUMN, FEATURE_NAMES, PER_SIDE, RANGES, ROLLS, expert_features
from nardy_ai.movegen import generate
from nardy_ai.variants import get_variant

BG = get_variant("backgammon")


def features(board) -> dict[str, float]:
    x = expert_features(np.asarray(board, np.int8)[None])[0]
    return {name: float(x[i]) for name, i in COLUMN.items()}


def afterstates(n_positions: int, seed: int = 0) -> np.ndarray:
    """One random afterstate each of ``n_positions`` positions met in random play."""
    pool = random_positions("backgammon", n_games=32, plies=120, seed=seed)
    rng = np.random.default_rng(seed)
    pos = pool[rng.choice(len(pool), n_positions, replace=False)]
    after = generate(pos, rng.integers(1, 7, (n_positions, 2)), BG)
    return after.boards[after.offsets[:-1] + (rng.random(n_positions) * after.counts()).astype(int)]


def crowded_boards(n: int, seed: int = 0) -> np.ndarray:
    """Boards (not necessarily reachable) with many blots and often several checkers on the bar:
    each side puts 1-15 checkers on random points (some on the bar), the rest borne off."""
    rng = np.random.default_rng(seed)
    out = np.zeros((n, 28), np.int8)
    for b in out:
        for sign, bar, off in ((1, 24, 26), (-1, 25, 27)):
            k = int(rng.integers(1, 16))
            b[bar] = min(k, int(rng.choice([0, 0, 0, 1, 1, 2, 3, 5])))
            left = k - b[bar]
            while left:
                p = rng.integers(0, 24)
                if b[p] * sign >= 0:
                    b[p] += sign
                    left -= 1
            b[off] = 15 - k
    return out


# --- the encoder -------------------------------------------------------------------------

def test_expert_encoder_starts_with_the_tdgammon_inputs():
    """Warm start: a tdgammon net's first-layer weights fit the first 198 inputs exactly."""
    boards = afterstates(300)
    enc = get_encoder("expert", "backgammon")
    x = enc(boards)
    assert (enc.family, enc.version, enc.n_features) == ("short", "1", 198 + fs.N_FEATURES)
    assert x.shape == (300, 238) and x.dtype == np.float32
    assert np.array_equal(x[:, :198], encode_tdgammon(boards))
    assert np.array_equal(x[:, 198:], expert_features(boards))
    assert ENCODERS["expert"].extends == "tdgammon"
    assert get_encoder("expert", "short_caucasian") is enc


def test_chunks_give_the_same_features(monkeypatch):
    boards = afterstates(50, seed=3)
    whole = expert_features(boards)
    monkeypatch.setattr(fs, "_CHUNK", 7)
    assert np.array_equal(expert_features(boards), whole)
    assert expert_features(boards[:0]).shape == (0, fs.N_FEATURES)


# --- hit chances (BG-2 .. BG-5) ----------------------------------------------------------

def test_direct_shot_six_pips_away():
    # Mover blot on 16, one opponent checker on 10, nothing between: the opponent hits with
    # any 6 (11 rolls), 5-1 and 4-2 (2 each, intermediate points open), 3-3 and 2-2: 17.
    # The same geometry the other way: the mover's 16 hits the opponent's blot on 10: 17.
    f = features(hand_board({16: 1, 10: -1}, off=14, opp_off=14))
    assert_features(f, {
        "opponent_hit1": 17 / 36,
        "mover_hit1": 17 / 36,
        "opponent_hit2": 0,
        "mover_hit2": 0,
        # Pips lost: the mover's blot on its 16 goes to the bar, 25 - 16 = 9 pips, on all 17
        # rolls; the opponent's blot on its point 15 (our 10) loses 10 pips.
        "opponent_pip_loss": 17 * 9 / (36 * 24),
        "mover_pip_loss": 17 * 10 / (36 * 24),
    })


def test_combination_shot_needs_an_open_intermediate_point():
    """BG-5: the blot 8 pips away, the mover holding the point 6 pips from the hitter."""
    # Opponent checker on 5, mover blot on 13, mover point on 11 (6 pips from 5).  8 = 6+2
    # (only via 2: 2 rolls), 5+3 (2), 4-4 (4, 8: 1); 2-2 needs 2, 4, 6 and 6 is closed: 0.
    f = features(hand_board({13: 1, 11: 2, 5: -1}, off=12, opp_off=14))
    assert f["opponent_hit1"] == pytest.approx(5 / 36)


def test_hits_from_the_bar_enter_first():
    """BG-4: hits on entering count; with two on the bar both dice must enter."""
    # One opponent checker on the bar, a mover blot on 4 (the opponent enters with die d on
    # our point d): any 4 (11), 3-1 (enter on 1 or 3, then the other die: 2), 2-2 (2, 4: 1),
    # 1-1 (1, 2, 3, 4: 1) = 15; each hit costs the mover 25 - 4 = 21 pips.
    f = features(hand_board({4: 1}, opp_bar=1, off=14, opp_off=14))
    assert_features(f, {
        "opponent_hit1": 15 / 36,
        "opponent_pip_loss": 15 * 21 / (36 * 24),
    })
    # Two on the bar: 3-1 enters on 3 and 1 and stops; 1-1 enters two and has two steps
    # (3 at most); 2-2 enters two on 2 and still plays 2 -> 4: any 4 (11) + 2-2 = 12.
    f = features(hand_board({4: 1}, opp_bar=2, off=14, opp_off=13))
    assert f["opponent_hit1"] == pytest.approx(12 / 36)
    # Blots on 4 and 2, two on the bar: rolls with a 4 or a 2 (20) and 1-1 (1 -> 2) hit;
    # two blots: 4-2 entering on both (2), 2-2 (enter on 2 hitting, then 2 -> 4): 3.
    f = features(hand_board({4: 1, 2: 1}, opp_bar=2, off=13, opp_off=13))
    assert_features(f, {
        "opponent_hit1": 21 / 36,
        "opponent_hit2": 3 / 36,
    })


def test_two_blots_and_one_checker():
    # The mover's single checker on 12, opponent blots on 9 (3 away) and 7 (5 away).  Hits:
    # a 3 or a 5 (20 rolls), 2-1 and 1-1 to 9 (3), 4-1 to 7 (2) = 25.  Two hits need one
    # checker hitting twice in a row: 3-2 (12/9*/7*): 2 rolls (5-3 has one checker for both).
    f = features(hand_board({12: 1, 9: -1, 7: -1}, off=14, opp_off=13))
    assert_features(f, {
        "mover_hit1": 25 / 36,
        "mover_hit2": 2 / 36,
        # Largest loss: 9 pips on the 14 rolls that reach 9 (a 3: 11, 2-1: 2, 1-1: 1), 7 on the
        # 11 that reach only 7 (5-1, 5-2, 5-4, 5-6: 8, 5-5, 4-1: 2).
        "mover_pip_loss": (14 * 9 + 11 * 7) / (36 * 24),
    })
    # Two checkers on 12: 5-3 now hits both (2 more rolls).
    f = features(hand_board({12: 2, 9: -1, 7: -1}, off=13, opp_off=13))
    assert f["mover_hit2"] == pytest.approx(4 / 36)


def reference_shots(boards: np.ndarray, side: int, legal: bool) -> np.ndarray:
    """``(M, 3)``: rolls (of 36) hitting one and two blots, and the sum over rolls of the largest
    pips lost, by plain Python over the 21 rolls: over the legal plays of movegen.generate, or
    over every partial play (``legal=False``: the reference generator's candidate plays, before
    COM-1/COM-2 choose).  ``side`` 0: the mover rolls (as if again), 1: the opponent rolls (on
    the flipped board).  A hit shows as a checker more on the blot owner's bar."""
    rollers = boards if side == 0 else flip(boards, BG)
    out = np.zeros((len(boards), 3), int)
    for (a, b) in ROLLS:
        weight = 2 if a != b else 1
        if legal:
            res = generate(rollers, np.tile([a, b], (len(boards), 1)), BG)
            plays = [res.boards[res.offsets[i]:res.offsets[i + 1]] for i in range(len(boards))]
        else:
            plays = [[after for bucket in _candidates(tuple(int(x) for x in r), (a, b), BG, 0,
                                                      False).values() for after in bucket]
                     for r in rollers]
        for i, (roller, after) in enumerate(zip(rollers, plays)):
            after = np.asarray(after, int).reshape(-1, 28)
            hits = after[:, OPP_BAR] - roller[OPP_BAR]
            was_blot = roller[:24] == -1
            hit_points = [p + 1 for row in after for p in np.flatnonzero(was_blot & (row[:24] >= 0))]
            out[i] += weight * np.array([(hits >= 1).any(), (hits >= 2).any(), max(hit_points, default=0)])
    return out


def fast_shots(boards: np.ndarray, side: int) -> np.ndarray:
    x = expert_features(boards)
    who = ("mover", "opponent")[side]
    scale = (36, 36, 36 * 24)
    return np.rint(np.stack([x[:, COLUMN[f"{who}_{f}"]] * s for f, s in
                             zip(("hit1", "hit2", "pip_loss"), scale)], 1)).astype(int)


@pytest.mark.parametrize("side", [0, 1])
def test_shots_count_every_partial_play(side):
    """Exactly the hits of the reference generator's candidate plays (all step sequences), on
    afterstates of random play and on crowded boards with checkers on the bar."""
    boards = np.concatenate([afterstates(60, seed=5), crowded_boards(60, seed=6)])
    assert np.array_equal(fast_shots(boards, side), reference_shots(boards, side, legal=False))


@pytest.mark.parametrize("side", [0, 1])
def test_shots_against_the_legal_plays(side):
    """Against movegen.generate's legal plays: never fewer (every legal play is a partial
    play), and the same on nearly all positions (only COM-1/COM-2 can forbid a hitting play)."""
    boards = afterstates(300, seed=7)
    fast, legal = fast_shots(boards, side), reference_shots(boards, side, legal=True)
    assert (fast >= legal).all()
    assert (fast == legal).all(axis=1).mean() >= 0.97


# --- escapes and containment -------------------------------------------------------------

def test_escapes_containment_and_mobility():
    # Mover's back checkers on 24; the opponent holds 18 and 17 (6 and 7 pips ahead); all
    # other mover checkers on the 1-point.  To pass 17 the checker must move 8 or more with an
    # open landing point on the way: 6-2, 6-3, 6-4, 6-5, 5-3, 5-4 (2 each), 4-4, 5-5: 14.
    f = features(hand_board({24: 2, 18: -2, 17: -2, 1: 13}, opp_off=11))
    assert_features(f, {
        "mover_back_escapes": 14 / 36,
        # Mobility: two checkers outside the home board with 14 escapes each.
        "mover_mobility": 2 * 14 / (15 * 36),
        # The opponent's containment of the mover: the fewest escapes from our points 15-24 is
        # from 24 (23: 17, 22: 22, below more; 16 and 15 are past both points: 36).
        "opponent_contain": (36 - 14) / 36,
        "opponent_acontain": (36 - 14) / 36,
        # The opponent's own checkers are past every mover checker but the 1-point ones... which
        # hold no point in front of them: nothing to escape, nothing contained.
        "opponent_back_escapes": 1.0,
        "mover_contain": 0.0,
        "mover_acontain": 0.0,
    })


def test_acontain_counts_only_points_the_checker_still_has_to_pass():
    # Opponent holds our 18 and 17; the mover's rearmost checker on 14 is past them: no
    # actual containment, though the points still contain in general (contain 22/36 as above).
    f = features(hand_board({14: 2, 18: -2, 17: -2, 1: 13}, opp_off=11))
    assert_features(f, {
        "opponent_acontain": 0.0,
        "opponent_contain": 22 / 36,
    })


def test_escapes_ignore_the_opponents_anchors_in_our_home_board():
    # Mover checker on 13, opponent anchors on our 1 and 2 and a point on 12: only 12 blocks
    # (1 pip ahead), so every roll but 1-1 escapes: 35.
    f = features(hand_board({13: 1, 12: -2, 1: -2, 2: -2, 6: 14}, opp_off=9))
    assert f["mover_back_escapes"] == pytest.approx(35 / 36)


# --- structure: timing, points, anchors, entering ----------------------------------------

def test_timing_pips_points_and_entering():
    # Mover: 6-point (2), 5-point (3), a blot on 8, an anchor on 20 (2).  Timing: every
    # checker to the 1-point, keeping two on each held home point and anchor: the spare on 5
    # (4 pips) + the 8 (7 pips) = 11.  Pips 12 + 15 + 8 + 40 = 75.
    f = features(hand_board({6: 2, 5: 3, 8: 1, 20: 2}, off=7, opp_off=15))
    assert_features(f, {
        "mover_timing": 11 / 167,
        "mover_pips": 75 / 167,
        "mover_anchors": 1 / 6,
        "mover_forward_anchor": (25 - 20) / 6,
        "mover_backgame": 0.0,
        # Two home points closed: an opponent checker on the bar dances on 2 x 2 of the 36
        # rolls; two on the bar both enter only when both dice show one of the 4 open points.
        "mover_closed": 2 / 6,
        "opponent_dance1": 4 / 36,
        "opponent_dance2": 1 - 16 / 36,
        "mover_dance1": 0.0,
        "opponent_closed": 0.0,
        "mover_prime": 2 / 6,  # 5-6
        "mover_backbone": 2 / 6,
    })


def test_prime_backbone_and_back_game():
    # Points 4, 5, 6, 8, 9 and anchors on 24 and 21; a checker on the bar.  Longest run 3
    # (4-6); the most points in 6 in a row: 4-9 holds 5.  Two anchors: a back game, with the
    # 2 + 2 checkers on 21 and 24 and the one on the bar: 5 / 15.
    f = features(hand_board({4: 2, 5: 2, 6: 2, 8: 2, 9: 2, 21: 2, 24: 2}, bar=1, opp_off=15))
    assert_features(f, {
        "mover_prime": 3 / 6,
        "mover_backbone": 5 / 6,
        "mover_anchors": 2 / 6,
        "mover_forward_anchor": (25 - 21) / 6,
        "mover_backgame": 5 / 15,
    })
    # Six home points closed: the opponent dances on every roll.
    f = features(hand_board({p: 2 for p in range(1, 7)}, off=3, opp_off=15))
    assert_features(f, {
        "opponent_dance1": 1.0,
        "opponent_dance2": 1.0,
        "mover_prime": 1.0,
    })


def test_contact_break_contact_and_free_pips():
    # Mover: 3 (2), 10 (1), 20 (2); opponent on our 8 (2) and 15 (1).  The opponent's rearmost
    # checker is on our 8: the two on 3 are past it (free pips 6); to break contact 10 must
    # reach 7 (3 pips) and each 20 (13 pips): 29.  The opponent in its numbering: 17 (2) and
    # 10 (1); our rearmost checker is on its 5: 2 x 13 + 6 = 32 to break contact, none free.
    f = features(hand_board({3: 2, 10: 1, 20: 2, 8: -2, 15: -1}, off=10, opp_off=12))
    assert_features(f, {
        "mover_free_pips": 6 / 167,
        "mover_break_contact": 29 / 167,
        "opponent_free_pips": 0.0,
        "opponent_break_contact": 32 / 167,
        "contact": 1.0,
        "pip_lead": (44 - 56) / 100,  # pips 56 (mover), 44
    })
    # With an opponent checker on the bar every mover checker must come home and bear off.
    f = features(hand_board({3: 2, 10: 1, 20: 2, 8: -2}, opp_bar=1, off=10, opp_off=12))
    assert_features(f, {
        "mover_break_contact": 56 / 167,
        "mover_free_pips": 0.0,
    })
    # A race: every mover checker past every opponent checker.
    f = features(hand_board({3: 2, 5: 3, 9: -2, 20: -1}, off=10, opp_off=12))
    assert_features(f, {
        "contact": 0.0,
        "mover_break_contact": 0.0,
        "opponent_break_contact": 0.0,
        "mover_free_pips": 21 / 167,
    })


# --- properties --------------------------------------------------------------------------

def test_values_are_finite_and_in_their_documented_ranges():
    boards = np.concatenate([afterstates(500, seed=11), crowded_boards(200, seed=12)])
    x = expert_features(boards)
    assert np.isfinite(x).all()
    lo = np.array([RANGES[n][0] for n in FEATURE_NAMES])
    hi = np.array([RANGES[n][1] for n in FEATURE_NAMES])
    assert (x >= lo - 1e-6).all() and (x <= hi + 1e-6).all()
    assert (x.std(axis=0) > 0).sum() >= len(FEATURE_NAMES) - 2     # they do vary


def test_flipping_the_board_swaps_the_sides():
    boards = np.concatenate([afterstates(400, seed=13), crowded_boards(100, seed=14)])
    x, y = expert_features(boards), expert_features(flip(boards, BG))
    for f in PER_SIDE:
        assert np.array_equal(y[:, COLUMN[f"mover_{f}"]], x[:, COLUMN[f"opponent_{f}"]]), f
        assert np.array_equal(y[:, COLUMN[f"opponent_{f}"]], x[:, COLUMN[f"mover_{f}"]]), f
    assert np.array_equal(y[:, COLUMN["pip_lead"]], -x[:, COLUMN["pip_lead"]])
    assert np.array_equal(y[:, COLUMN["contact"]], x[:, COLUMN["contact"]])


# --- nardy bench features ----------------------------------------------------------------

def test_bench_features_times_every_encoder_of_the_family(monkeypatch, capsys):
    from nardy_ai import encoding
    from nardy_ai.cli import main
    later = encoding.Encoder("later", "1", "short", 198, encoding.encode_tdgammon)
    monkeypatch.setitem(encoding.ENCODERS, "later", later)
    assert main(["bench", "features", "--batch", "256", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("machine: ") and "256 afterstates" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[3:]}
    assert set(rows) == {e.name for e in encoding.ENCODERS.values() if e.family == "short"}
    assert rows["tdgammon"][-1] == "1.00" and rows["expert"][2] == "238"
