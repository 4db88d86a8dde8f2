"""Long-nardy expert features (nardy_ai/features_long.py) and the ``long_expert`` encoder:
every feature on hand-built positions (values worked out by hand in the comments), properties
over positions from random play, and the escape / mobility counts against the legal plays of
:func:`nardy_ai.movegen.generate` on all 21 rolls."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from feature_helpers import assert_features
from nardy_ai import movegen
from nardy_ai.bench.positions import random_positions
from nardy_ai.board import OFF, OPP_OFF, flip, start_board, validate
from nardy_ai.classes import long_contact
from nardy_ai.encoding import ENCODERS, encode_long, encode_long_expert, get_encoder
from nardy_ai.features_long import COLUMN, FEATURE_NAMES, N_FEATURES, PER_SIDE, ROLLS, long_features
from nardy_ai.variants import Variant, get_variant


def lpos(mover: dict[int, int], opp: dict[int, int], opp_off: int | None = None) -> np.ndarray:
    """A long-nardy afterstate from the mover's view: ``mover`` {mover's point: checkers},
    ``opp`` {the opponent's OWN point number: checkers} (LN-1: its point q is the mover's
    point ((q + 11) mod 24) + 1).  Checkers not on the board are borne off."""
    b = np.zeros(28, np.int8)
    for p, n in mover.items():
        b[p - 1] = n
    for q, n in opp.items():
        p = (q + 11) % 24 + 1
        assert b[p - 1] == 0, f"opponent point {q} is the mover's point {p}, taken"
        b[p - 1] = -n
    b[OFF] = 15 - sum(mover.values())
    b[OPP_OFF] = 15 - sum(opp.values())
    validate(b, "long")
    return b


def feats(b: np.ndarray) -> dict[str, float]:
    row = long_features(np.asarray(b)[None])[0]
    return {name: float(row[i]) for i, name in enumerate(FEATURE_NAMES)}


def afterstates(n: int, seed: int) -> np.ndarray:
    """``n`` afterstates of long nardy met in random play."""
    rng = np.random.default_rng(seed)
    pool = random_positions("long", n_games=64, plies=160, seed=seed)
    pos = pool[rng.choice(len(pool), n, replace=False)]
    after = movegen.generate(pos, rng.integers(1, 7, (n, 2)), "long")
    return after.boards[after.offsets[:-1] + rng.integers(0, after.counts())]


def near_home(n: int, seed: int) -> np.ndarray:
    """Positions where the mover has at most three checkers outside home and the opponent's
    checkers stand anywhere (also in the mover's home): the bear-off cases of mobility."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        b = np.zeros(28, np.int8)
        on = int(rng.integers(1, 16))
        outside = int(rng.integers(0, 4))
        for i in range(on):
            b[rng.integers(6, 24) if i < outside else rng.integers(0, 6)] += 1
        free = np.flatnonzero(b[:24] == 0)
        theirs = int(rng.integers(1, 16))
        for _ in range(theirs):
            b[rng.choice(free)] -= 1
        b[OFF], b[OPP_OFF] = 15 - on, 15 - theirs
        out.append(b)
    return np.array(out)


@pytest.fixture(scope="module")
def sample() -> np.ndarray:
    return afterstates(400, seed=11)


# --- the encoder ------------------------------------------------------------------------------

def test_registered_and_extends_long():
    enc = get_encoder("long_expert", "long")
    assert (enc.family, enc.version, enc.extends) == ("long", "1", "long")
    assert enc.n_features == 212 + N_FEATURES
    assert get_encoder("long_expert", "long_dave") is enc
    assert ENCODERS["long"].n_features == 212
    assert len(FEATURE_NAMES) == N_FEATURES == 2 * len(PER_SIDE) + 1


def test_first_212_inputs_are_the_long_encoder(sample):
    x = encode_long_expert(sample)
    assert x.shape == (len(sample), 212 + N_FEATURES) and x.dtype == np.float32
    np.testing.assert_array_equal(x[:, :212], encode_long(sample))
    np.testing.assert_array_equal(x[:, 212:], long_features(sample))


def test_batches_are_independent(sample):
    whole = long_features(sample[:40])
    for i in range(0, 40, 7):
        np.testing.assert_array_equal(long_features(sample[i:i + 1])[0], whole[i])
    assert long_features(sample[:0]).shape == (0, N_FEATURES)


# --- hand-built positions -------------------------------------------------------------------------

def test_start_position():
    f = feats(start_board("long"))
    for side in ("mover", "opponent"):
        # Each side holds only its head (LN-1): a block of 1 on its point 24, with all 15 of
        # the other side behind it (the other's head, its point 24, is the holder's 12).
        assert f[f"{side}_block"] == pytest.approx(1 / 6)
        assert f[f"{side}_block_low"] == pytest.approx(24 / 24)
        assert f[f"{side}_block_behind"] == pytest.approx(15 / 15)
        assert f[f"{side}_prime"] == f[f"{side}_six_block"] == f[f"{side}_six_threat"] == 0
        # Rearmost checker on 24, the other head 12 pips ahead: only 5-5 (24/19/14/9) gets
        # past it; 6-6 and 4-4 land on it, 3-3 reaches 15, non-doubles at most 11 pips.
        assert f[f"{side}_escapes"] == pytest.approx(1 / 36)
        # Every roll plays in full but 6-6: two head checkers (LN-4) to 18, 12 is closed.
        assert f[f"{side}_no_play"] == 0
        assert f[f"{side}_part_play"] == pytest.approx(1 / 36)
        assert f[f"{side}_head_exits"] == pytest.approx(36 / 36)      # points 23-18 empty
        assert f[f"{side}_first_quarter"] == pytest.approx(1.0)
        assert f[f"{side}_o_home"] == 0 and f[f"{side}_third_quarter"] == 0
        assert f[f"{side}_bring_home"] == pytest.approx(15 * 18 / 270)
        assert f[f"{side}_race_lead"] == 0
        assert f[f"{side}_contact_checkers"] == pytest.approx(15 / 15)
    assert f["contact"] == 1


def test_block_what_it_holds_back_and_prime():
    # Mover: head 24 (7) and a 4-point block on 20-17 = opponent points 8-5; the opponent:
    # 10 on its head (its 24 = mover's 12, behind the block) and 5 on its 2 (mover's 14,
    # ahead of it).
    f = feats(lpos({24: 7, 20: 2, 19: 2, 18: 2, 17: 2}, {24: 10, 2: 5}))
    assert_features(f, {
        "mover_block": 4 / 6,
        "mover_block_low": 17 / 24,  # its last point on their route
        "mover_block_behind": 10 / 15,
        # The 10 behind it face a block of 4: w(4) = 2/4 each -> 5; the 5 ahead of it nothing.
        "mover_prime": 5 / 15,
        "mover_six_block": 0,
        "mover_six_threat": 0,
        # The opponent holds its 24 and 2 (mover's 12 and 14), blocks of 1; of the two, the one
        # furthest along the mover's route is its 24 (the mover's 12), all 15 mover checkers
        # (on 24 and 20-17) behind it.
        "opponent_block": 1 / 6,
        "opponent_block_low": 24 / 24,
        "opponent_block_behind": 15 / 15,
        "opponent_prime": 0,
        # Contact: every mover checker (24, 20-17) still has the opponent's 12 or 14 ahead; the
        # mover's checkers are the opponent's points 12 and 8-5, ahead of its 10 on 24, behind its
        # 5 on 2.
        "mover_contact_checkers": 15 / 15,
        "opponent_contact_checkers": 10 / 15,
        "contact": 1,
    })


def test_block_across_the_seam_of_the_holders_numbering():
    # The mover's points 2, 1, 24, 23 are the opponent's 14, 13, 12, 11: one block of 4 on
    # the opponent's route, though not consecutive in the mover's numbering.  Its last point
    # on their route is the opponent's 11 = the mover's 23.  The opponent's 15 on its 24 are
    # behind it; with the mover's 13-12 held instead it would be two blocks (their 1 and 24).
    f = feats(lpos({2: 3, 1: 3, 24: 6, 23: 3}, {24: 15}))
    assert_features(f, {
        "mover_block": 4 / 6,
        "mover_block_low": 23 / 24,
        "mover_block_behind": 15 / 15,
        "mover_prime": 15 * (2 / 4) / 15,
    })


def test_six_block_and_threats_ln5():
    # Six-block on the mover's 24-19 = opponent points 12-7, legal: the opponent's checker on
    # its 3 is ahead of it (LN-5); its 14 on 24 are behind the block: w(6) = 1 each.
    f = feats(lpos({24: 5, 23: 2, 22: 2, 21: 2, 20: 2, 19: 2}, {24: 14, 3: 1}))
    assert_features(f, {
        "mover_six_block": 1,
        "mover_block": 1.0,
        "mover_block_low": 19 / 24,
        "mover_block_behind": 14 / 15,
        "mover_prime": 14 / 15,
        "opponent_six_block": 0,
    })
    # Five in a row on the mover's 23-19 (opponent points 11-7), the mover's 24 (their 12)
    # empty: a six-block there is legal with their checker on 3 ahead of it.
    threat = {23: 3, 22: 3, 21: 3, 20: 3, 19: 3}
    f = feats(lpos(threat, {24: 14, 3: 1}))
    assert_features(f, {
        "mover_six_threat": 1,
        "mover_six_block": 0,
    })
    # The same with no opponent checker ahead and none borne off: LN-5 forbids both sixth
    # points (their 12 and their 6), so no threat ...
    assert feats(lpos(threat, {24: 15}))["mover_six_threat"] == 0
    # ... but one borne off makes any block legal again.
    assert feats(lpos(threat, {24: 14}))["mover_six_threat"] == 1
    # A sixth point holding an opponent checker is no threat: their 12 and 6 (the mover's 24
    # and 18) both taken.
    assert feats(lpos(threat, {24: 13, 12: 1, 6: 1}))["mover_six_threat"] == 0


def test_escapes_of_the_rearmost_checker():
    # Mover's rearmost checker on 20; the opponent holds the mover's 17-14 (its points 5-2),
    # 3-6 pips ahead; 19, 18, 13, 12 are open.  Escaping = reaching 13 or lower (7+ pips):
    # a 1 or 2 then the rest through 19/18: 6-1, 6-2, 5-2 (x2 each) = 6; no double gets
    # past (1-1 stops at 18, 2-2 and the others land on 17-14 at once).
    f = feats(lpos({20: 1, 6: 14}, {5: 3, 4: 4, 3: 4, 2: 4}))
    assert_features(f, {
        "mover_escapes": 6 / 36,
        # The opponent's rearmost (its 5) has no mover checker in the 12 points ahead: free.
        "opponent_escapes": 36 / 36,
        "mover_head_exits": 0,  # nothing on the head
    })


def test_escapes_in_the_home_board_count_bearing_off():
    # Mover's rearmost on 4 with opponent checkers on the mover's 3 and 2 (its points 15 and
    # 14): past them means point 1 or off, 3+ pips.  Every non-double with a die >= 3 (14 of
    # 15, all but 2-1: x2 = 28) and the doubles 3-3 .. 6-6 (4): 32.
    b = lpos({4: 1, 1: 14}, {15: 1, 14: 1, 24: 13})
    assert feats(b)["mover_escapes"] == pytest.approx(32 / 36)


def test_mobility_head_rule_and_first_double():
    # The mover holds its 11-7 (the opponent's 23-19); the opponent has all 15 on its head.
    # Only a 6 leaves the head (to its 18 = mover's 6), then the other die goes on from there
    # (LN-3: one head checker per turn): 6-x plays both, 5 rolls x2 = 10.  Rolls without a 6
    # play nothing: 10 non-doubles x2 = 20, and 1-1 .. 5-5: 5.  6-6: two head checkers (LN-4),
    # 24/18/12/6 and 24/18 - four steps.
    f = feats(lpos({11: 3, 10: 3, 9: 3, 8: 3, 7: 3}, {24: 15}))
    assert_features(f, {
        "opponent_no_play": 25 / 36,
        "opponent_part_play": 0,
        "opponent_head_exits": 11 / 36,  # the rolls with a 6
        "mover_head_exits": 0,
    })


def test_mobility_bearing_off_within_a_roll():
    # Mover: two on 6, one on 5 (12 off); an opponent checker on the mover's 4 (its 16).
    # Doubles: 1-1 plays 6/5 twice, then 5/4 is closed and nothing bears off (checkers above
    # the 1): 2 steps.  2-2: 5/3/1, then 6/4 closed and the 1 may not bear off: 2 steps.
    # 6-6: three checkers off, none left: 3 steps.  3-3 (6/3 6/3 5/2 3/off), 4-4 (6/2 6/2
    # 5/1 2/off), 5-5 play four; every non-double plays both dice.
    f = feats(lpos({6: 2, 5: 1}, {16: 1, 24: 14}))
    assert_features(f, {
        "mover_no_play": 0,
        "mover_part_play": 3 / 36,
    })


def test_progress_race_lead_and_contact_counts():
    # Mover: 24 (2), 20 (3), 15 (4), 10 (3), 3 (2), one off: 204 pips.  Opponent: 10 on its
    # 24 (mover's 12), 5 on its 1 (mover's 13): 245 pips.
    f = feats(lpos({24: 2, 20: 3, 15: 4, 10: 3, 3: 2}, {24: 10, 1: 5}))
    assert_features(f, {
        "mover_first_quarter": 5 / 15,
        "mover_o_home": 4 / 15,
        "mover_third_quarter": 3 / 15,
        # 2 * 18 + 3 * 14 + 4 * 9 + 3 * 4 pips to bring them home.
        "mover_bring_home": 126 / 270,
        "opponent_first_quarter": 10 / 15,
        "opponent_bring_home": 180 / 270,
        "mover_race_lead": (245 - 204) / (245 + 204),
        "opponent_race_lead": 0,
        # Mover checkers above its 12 (24, 20, 15: 9) have the opponent's 12 ahead; the opponent's
        # 10 on its 24 have the mover's checker on their 3 (the mover's 15) ahead.
        "mover_contact_checkers": 9 / 15,
        "opponent_contact_checkers": 10 / 15,
    })


def test_contact_and_race():
    # Both sides home (the opponent's home is the mover's 13-18): no checker has an opponent
    # checker ahead of it: a race.
    race = lpos({6: 5, 5: 5, 4: 5}, {6: 5, 5: 5})
    f = feats(race)
    assert (f["contact"], f["mover_contact_checkers"], f["opponent_contact_checkers"]) == (0, 0, 0)
    # The mover is home, but the opponent's last checker on its head (the mover's 12) must
    # still pass through the mover's home (its points 13-18 are the mover's 1-6): contact,
    # though no mover checker has anything ahead.
    f = feats(lpos({1: 15}, {24: 1, 1: 14}))
    assert_features(f, {
        "contact": 1,
        "mover_contact_checkers": 0,
        "opponent_contact_checkers": 1 / 15,
    })
    # The opponent's checker on its 20 (the mover's 8) is ahead of the mover's checker on 9,
    # and the mover's 14 on 3 (the opponent's 15) are ahead of it in turn; the opponent's 14
    # on its 3 (the mover's 15) have nothing ahead.
    f = feats(lpos({9: 1, 3: 14}, {20: 1, 3: 14}))
    assert_features(f, {
        "contact": 1,
        "mover_contact_checkers": 1 / 15,
        "opponent_contact_checkers": 1 / 15,
    })


# --- properties over random play ----------------------------------------------------------------

def test_finite_and_in_range(sample):
    x = long_features(np.concatenate([sample, near_home(100, seed=2)]))
    assert np.isfinite(x).all()
    assert (x >= 0).all() and (x <= 1).all()
    assert (x[:, COLUMN["mover_race_lead"]] * x[:, COLUMN["opponent_race_lead"]] == 0).all()
    binary = [COLUMN[f"{s}_{f}"] for s in ("mover", "opponent")
              for f in ("six_block", "six_threat")]
    assert set(np.unique(x[:, binary + [COLUMN["contact"]]])) <= {0.0, 1.0}


def test_flip_swaps_the_sides(sample):
    a = long_features(sample)
    b = long_features(flip(sample, "long"))
    for f in PER_SIDE:
        np.testing.assert_array_equal(a[:, COLUMN[f"mover_{f}"]], b[:, COLUMN[f"opponent_{f}"]])
        np.testing.assert_array_equal(a[:, COLUMN[f"opponent_{f}"]], b[:, COLUMN[f"mover_{f}"]])
    np.testing.assert_array_equal(a[:, COLUMN["contact"]], b[:, COLUMN["contact"]])


def test_contact_is_the_long_contact_class(sample):
    x = long_features(sample)
    np.testing.assert_array_equal(x[:, COLUMN["contact"]] == 1, long_contact(sample))
    assert 0 < x[:, COLUMN["contact"]].mean() < 1           # the sample has races too


# --- escapes and mobility against the move generator --------------------------------------------

class _NoSixBlockRule(Variant):
    """Long nardy without LN-5, which ``no_play`` / ``part_play`` do not apply."""

    @property
    def six_block_rule(self) -> bool:
        return False


def _without_ln5() -> Variant:
    v = get_variant("long")
    return _NoSixBlockRule(**{f.name: getattr(v, f.name) for f in dataclasses.fields(v)})


def _reference_mobility(on_roll: np.ndarray, variant) -> tuple[np.ndarray, np.ndarray]:
    """Rolls (of 36) with no step played, and with part of the roll, from the most steps of
    the legal plays (COM-1/COM-3) of each roll."""
    n = len(on_roll)
    none, part = np.zeros(n, int), np.zeros(n, int)
    for a, b in ROLLS:
        after = movegen.generate(on_roll, np.tile([a, b], (n, 1)), variant)
        steps = np.zeros(n, int)
        np.maximum.at(steps, after.parent, after.steps)
        weight, full = (1, 4) if a == b else (2, 2)
        none += weight * (steps == 0)
        part += weight * ((steps > 0) & (steps < full))
    return none, part


def _reference_escapes(on_roll: np.ndarray) -> np.ndarray:
    """The rolls that carry the rearmost checker, played as the side's only checker (the rest
    borne off), beyond the lowest point holding an opponent checker among the 12 in front of
    it: some legal play leaves it on a lower point, or borne off."""
    n = len(on_roll)
    esc = np.full(n, 36)
    lone, lowest, rows = [], [], []
    for i, b in enumerate(on_roll):
        mine = np.flatnonzero(b[:24] > 0)
        if not len(mine):
            continue
        back = mine[-1]
        window = [p for p in range(max(back - 12, 0), back) if b[p] < 0]
        if not window:
            continue
        x = b.copy()
        x[:24] = np.minimum(b[:24], 0)
        x[back], x[OFF] = 1, 14
        lone.append(x)
        lowest.append(min(window))
        rows.append(i)
    if not rows:
        return esc
    lone, lowest = np.array(lone), np.array(lowest)
    esc[rows] = 0
    for a, b in ROLLS:
        after = movegen.generate(lone, np.tile([a, b], (len(lone), 1)), "long")
        pts = after.boards[:, :24] > 0
        where = np.where(pts.any(axis=1), np.argmax(pts, axis=1), -1)     # -1: borne off
        beyond = np.zeros(len(lone), bool)
        np.logical_or.at(beyond, after.parent, where < lowest[after.parent])
        esc[rows] += (1 if a == b else 2) * beyond
    return esc


@pytest.mark.parametrize("side", ["mover", "opponent"])
def test_escapes_and_mobility_match_the_move_generator(sample, side):
    # Afterstates from random play, and positions where the side checked is near home.
    near = near_home(150, seed=5)
    boards = np.concatenate([sample[:300], near if side == "mover" else flip(near, "long")])
    on_roll = boards if side == "mover" else flip(boards, "long")     # that side to roll
    x = long_features(boards)
    none, part = _reference_mobility(on_roll, _without_ln5())
    np.testing.assert_array_equal(np.rint(x[:, COLUMN[f"{side}_no_play"]] * 36), none)
    np.testing.assert_array_equal(np.rint(x[:, COLUMN[f"{side}_part_play"]] * 36), part)
    assert none.any() and part.any()
    esc = _reference_escapes(on_roll)
    np.testing.assert_array_equal(np.rint(x[:, COLUMN[f"{side}_escapes"]] * 36), esc)
    assert ((esc > 0) & (esc < 36)).sum() > 50
