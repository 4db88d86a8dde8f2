"""The one-sided bear-off database and exact bear-off outcomes (nardy_ai/bearoff.py, COM-5).

The brute force below is written separately from the module, from RULES.md: its own move
lister for one side's home board (COM-1/2/3/5), one-sided policies by plain recursion, and a
two-sided game recursion that never combines distributions.
"""

import itertools
from functools import lru_cache

import numpy as np
import pytest

from nardy_ai import bearoff, cli
from nardy_ai.board import BOARD_SIZE, OFF, OPP_BAR, OPP_OFF, flip, mirror_index
from nardy_ai.errors import InvalidPosition
from nardy_ai.movegen import generate
from nardy_ai.variants import get_variant, with_options

ROLLS = [((a, b), (1 if a == b else 2) / 36) for a in range(1, 7) for b in range(a, 7)]
VARIANTS = ["backgammon", "short_caucasian", "short_trictrac", "long", "long_dave"]


@pytest.fixture(scope="module")
def db():
    """The full database, built once (a few seconds)."""
    return bearoff.build_database()


def afterstate(mover, opp, variant="backgammon"):
    """An afterstate board: the mover's checkers on its points 1-6, the opponent's on its own
    points 1-6 (its home seen from the mover: 24..19 short, 13..18 long), the rest off."""
    v = get_variant(variant)
    b = np.zeros(BOARD_SIZE, np.int8)
    b[:6] = mover
    b[mirror_index(v)[:6]] = -np.asarray(opp)
    b[OFF], b[OPP_OFF] = 15 - sum(mover), 15 - sum(opp)
    return b


# --- the brute force: one side's plays straight from COM-1/2/3/5 ----------------------------

def _die_steps(pos, d):
    """Every result of playing one die ``d`` from a home board (COM-5): a checker on ``d``
    comes off; a checker above ``d`` moves down ``d``; with none on ``d`` or above, the
    highest checker comes off."""
    out = set()
    top = max((p for p in range(1, 7) if pos[p - 1]), default=0)
    for p in range(1, 7):
        if not pos[p - 1]:
            continue
        q = list(pos)
        q[p - 1] -= 1
        if p > d:
            q[p - d - 1] += 1
        elif not (p == d or p == top):
            continue
        out.add(tuple(q))
    return out


@lru_cache(maxsize=None)
def plays(pos, roll):
    """Distinct results of a complete play of ``roll``: as many dice as can be played (COM-1,
    COM-3); when only one die of a non-double can be played, the larger (COM-2)."""
    a, b = roll
    orders = [(a,) * 4] if a == b else [(max(roll), min(roll)), (min(roll), max(roll))]
    by_steps = {}
    for order in orders:
        frontier = {pos}
        for n, d in enumerate(order, 1):
            frontier = {q for p in frontier for q in _die_steps(p, d)}
            if not frontier:
                break
            by_steps.setdefault(n, []).append(frontier)
    if not by_steps:
        return (pos,)
    most = max(by_steps)
    chosen = by_steps[most][:1] if most == 1 else by_steps[most]   # COM-2: the larger first
    return tuple(sorted(set().union(*chosen)))


def _count(pos):
    return sum(pos)


@lru_cache(maxsize=None)
def expected_rolls(kind, pos):
    """Expected rolls to bear off all (``kind`` "off") or the first checker (``kind``
    "first"), each roll played to minimise it."""
    if not _count(pos):
        return 0.0
    return 1 + sum(w * min(rolls_after(kind, pos, q) for q in plays(pos, r)) for r, w in ROLLS)


def rolls_after(kind, pos, q):
    """Expected rolls still to go after playing from ``pos`` to ``q``: none once a checker is
    off when the goal is the first one."""
    return 0.0 if kind == "first" and _count(q) < _count(pos) else expected_rolls(kind, q)


def policy(kind, pos, roll):
    """The play of ``roll`` from ``pos`` that minimises the expected rolls to the goal of ``kind``."""
    return min(plays(pos, roll), key=lambda q: rolls_after(kind, pos, q))


def reached(kind, q):
    """The goal of a side: all off, or (the gammon saver, 15 checkers) one off."""
    return _count(q) == 0 if kind == "off" else _count(q) < 15


@lru_cache(maxsize=None)
def race(u, v, ku, kv):
    """P(the side on roll, at ``u`` playing policy ``ku``, reaches its goal before the other
    side, at ``v`` playing ``kv``), by playing the game out roll by roll."""
    total = 0.0
    for r, w in ROLLS:
        q = policy(ku, u, r)
        total += w if reached(ku, q) else w * (1 - race(v, q, kv, ku))
    return total


@lru_cache(maxsize=None)
def best_race(u, v):
    """P(the side on roll at ``u`` wins) when both sides maximise their chance to win."""
    return sum(w * max(1.0 if not _count(q) else 1 - best_race(v, q) for q in plays(u, r))
               for r, w in ROLLS)


def brute_win(x, y):
    """P(win) of the afterstate: mover at ``x``, opponent at ``y`` on roll, both bearing off
    as fast as they can."""
    return 1 - race(y, x, "off", "off")


def brute_gammons(x, y):
    """(gammon win, gammon loss) of the afterstate: the winner bears off as fast as it can,
    a loser with 15 checkers plays to get one off."""
    gw = 1 - race(y, x, "first", "off") if _count(y) == 15 else 0.0
    gl = race(y, x, "off", "first") if _count(x) == 15 else 0.0
    return gw, gl


def small_positions(n):
    return [p for p in itertools.product(range(n + 1), repeat=6) if 0 < sum(p) <= n]


# --- a. the database against the brute force ------------------------------------------------

def test_small_races_match_brute_force(db):
    """COM-5: every pair of positions of at most 3 checkers a side and a sample of 4 against 4,
    the database's combination agrees with playing the race out, to 1e-9."""
    rng = np.random.default_rng(0)
    three = small_positions(3)
    four = [p for p in small_positions(4) if sum(p) == 4]
    pairs = list(itertools.product(three, three))
    pairs += [(four[i], four[j]) for i, j in rng.integers(0, len(four), (40, 2))]
    boards = np.array([afterstate(x, y) for x, y in pairs])
    got = bearoff.bearoff_outcomes(boards, "backgammon", db)
    want = np.array([brute_win(x, y) for x, y in pairs])
    assert np.abs(got[:, 0] - want).max() < 1e-9
    assert (got[:, 1:] == 0).all()           # a side with a checker off is never gammoned


LOSERS = [(0, 0, 0, 5, 5, 5), (0, 0, 0, 3, 5, 7), (1, 0, 0, 0, 4, 10)]


@pytest.mark.parametrize("loser", LOSERS)
def test_gammons_match_brute_force(db, loser):
    """BG-6 / LN-7: against a 15-checker side, gammon (mars) win and loss agree with the
    brute force to 1e-9, with the 15-checker side on roll and not on roll."""
    winners = [(0, 0, 0, 0, 0, 1), (1, 1, 1, 0, 0, 0), (0, 0, 1, 0, 1, 1), (0, 0, 0, 0, 2, 2),
               (0, 0, 0, 1, 1, 2), (2, 0, 0, 0, 0, 0)]
    for variant in ("backgammon", "long"):
        boards = np.array([afterstate(w, loser, variant) for w in winners]
                          + [afterstate(loser, w, variant) for w in winners])
        got = bearoff.bearoff_outcomes(boards, variant, db)
        want = np.array([brute_gammons(w, loser) for w in winners]
                        + [brute_gammons(loser, w) for w in winners])
        L = len(get_variant(variant).scoring)
        assert np.abs(got[:, [1, L]] - want).max() < 1e-9
        assert want[:len(winners), 0].min() > 0 and want[len(winners):, 1].min() > 0


def test_one_sided_policies_match_brute_force(db):
    """The stored expectations (all off, first off) equal the recursion's on a sample."""
    pts = bearoff.index_positions(4)
    idx = bearoff.position_index(pts)
    assert (idx == np.arange(len(pts))).all()
    assert np.abs(db.expected_off[idx] - [expected_rolls("off", tuple(p)) for p in pts]).max() < 1e-9
    assert np.abs(db.expected_first[idx] - [expected_rolls("first", tuple(p)) for p in pts]).max() < 1e-9
    big = bearoff.position_index(LOSERS)
    assert np.abs(db.expected_first[big] - [expected_rolls("first", p) for p in LOSERS]).max() < 1e-9


def test_tied_plays_lead_to_the_same_distributions(db):
    """The stored distributions do not depend on which of equally good plays is kept."""
    assert db.tie_spread < 1e-12


# --- b. one-sided policies against best two-sided play ---------------------------------------

#: |P(win) with best two-sided play - the database's P(win)|, measured with this brute force:
#: at most 0.0014 over all 6,889 pairs of positions of up to 3 checkers a side, and 0.0095
#: over all 43,681 pairs of up to 4 (the largest: mover 1 on the 1-point and 2 on the 3, the
#: opponent on roll with 2 on its 4 and 2 on its 6: 0.8609 one-sided, 0.8514 best play).
OPTIMAL_PLAY_BOUND = 0.01


def test_best_two_sided_play_stays_close_to_the_database(db):
    """Each side maximising its own chance to win (instead of minimising its expected rolls)
    changes P(win) by less than OPTIMAL_PLAY_BOUND on small positions: every pair of up to 3
    checkers a side and the worst pair of up to 4 measured."""
    three = small_positions(3)
    pairs = list(itertools.product(three, three)) + [((1, 0, 2, 0, 0, 0), (0, 0, 0, 2, 0, 2))]
    boards = np.array([afterstate(x, y) for x, y in pairs])
    got = bearoff.bearoff_outcomes(boards, "backgammon", db)[:, 0]
    best = np.array([1 - best_race(y, x) for x, y in pairs])
    gap = np.abs(best - got).max()
    assert gap < OPTIMAL_PLAY_BOUND


# --- c. references: by hand and published -------------------------------------------------

def test_hand_computable_references(db):
    """COM-5 by hand: one checker on the 6-point comes off in one roll with a 6, any sum of 6
    or more, or doubles 2-2 and up: 11 non-doubles x 2 + 5 doubles = 27 of 36, else surely in
    two (E = 1.25); two checkers on the 1-point always take one roll."""
    one_on_6 = bearoff.position_index([(0, 0, 0, 0, 0, 1)])
    assert db.off[one_on_6, 1] == pytest.approx(27 / 36, abs=1e-12)
    assert db.off[one_on_6, 2] == pytest.approx(9 / 36, abs=1e-12)
    assert bearoff.expected_rolls(np.array([(0, 0, 0, 0, 0, 1)]), db) == pytest.approx(1.25)
    assert bearoff.rolls_distribution(np.array([(2, 0, 0, 0, 0, 0)]), db)[0, 1] == pytest.approx(1.0)


def test_checkers_on_the_ace_point_by_hand(db):
    """n checkers on the 1-point: each roll takes 2 off, 4 with doubles (1 in 6), whatever
    the play: P_n(k) = 5/6 P_{n-2}(k-1) + 1/6 P_{n-4}(k-1)."""
    dist = {n: np.eye(1, 20, 0)[0] for n in range(-3, 1)}
    for n in range(1, 16):
        dist[n] = np.concatenate([[0], 5 / 6 * dist[n - 2][:-1] + 1 / 6 * dist[n - 4][:-1]])
    pts = np.zeros((15, 6), np.int64)
    pts[:, 0] = np.arange(1, 16)
    got = bearoff.rolls_distribution(pts, db)
    want = np.array([dist[n][:db.K] for n in range(1, 16)])
    assert np.abs(got[:, :20] - want[:, :20]).max() < 1e-12
    # "about 7 rolls" for 15 on the ace (bgonline.org, "Effective pip count" lesson, epc2.html)
    assert 6.9 < bearoff.expected_rolls(pts[-1:], db)[0] < 7.0


def test_published_expected_rolls(db):
    """One-sided values published from other programs' databases."""
    rolls = lambda p: bearoff.expected_rolls(np.array([p]), db)[0]          # noqa: E731
    # Kit Woolsey, "The Ultimate Pip Count" (Inside Backgammon 1993, GammOnLine Jan 2002,
    # bkgm.com/articles/GOL/Jan02/pipples.htm): [012345] (points 1..6) = 947 pipples.
    assert rolls((0, 1, 2, 3, 4, 5)) == pytest.approx(9.47, abs=0.005)
    # Mike Mannon, "Ideal Racing Positions" (bkgm.com/articles/Mannon/IdealRacingPositions):
    # 3-5-7 on the 4-5-6 points takes 10.5391 rolls.
    assert rolls((0, 0, 0, 3, 5, 7)) == pytest.approx(10.5391, abs=5e-5)
    # Jean-Luc Seret, "Count Your Pipples" (GammOnLine Dec 2000, bkgm.com/articles/GOL/Dec00/
    # pipples.htm): 1 0 5 0 0 1 from the 6-point down, off in 2..7 rolls with these
    # percentages, 4.48 rolls on average.
    pos = np.array([(1, 0, 0, 5, 0, 1)])
    seret = [0.0, 0.0, 0.69, 15.37, 27.54, 48.40, 7.84, 0.16]
    assert np.abs(100 * bearoff.rolls_distribution(pos, db)[0, :8] - seret).max() < 0.005 + 1e-9
    assert rolls(pos[0]) == pytest.approx(4.48, abs=0.005)
    # Stig Eide, rec.games.backgammon 30 Apr 1996, "Re: 15 positions that minimize waste of pips
    # in bear-off": least-wastage board per pip count (points 1..6) and its wastage; expected
    # rolls = (pips + wastage) / 8.1667.
    eide = {"100000": 7.17, "200000": 6.17, "110000": 5.17, "101000": 4.62, "000010": 4.30,
            "000001": 4.21, "010010": 5.05, "001010": 5.26, "000101": 5.11, "000011": 5.01,
            "000002": 5.23, "000111": 5.31, "000022": 5.65, "000222": 6.25, "000124": 6.39}
    boards = np.array([[int(c) for c in board] for board in eide])
    wastage = bearoff.effective_pip_count(boards, db) - boards @ np.arange(1, 7)
    assert np.abs(wastage - list(eide.values())).max() < 0.005 + 1e-6


def test_roll_against_roll_references(db):
    """Two-sided, opponent on roll (COM-6: the first to finish wins at once): one checker
    each on the 1-points, the opponent always wins; 4 on the ace on roll against 2 on the
    ace wins only with a double, 1/6 (XG's figure in "Racing reference positions",
    bgonline.org, jf.html)."""
    boards = np.array([afterstate((1, 0, 0, 0, 0, 0), (1, 0, 0, 0, 0, 0)),
                       afterstate((2, 0, 0, 0, 0, 0), (4, 0, 0, 0, 0, 0))])
    got = bearoff.bearoff_outcomes(boards, "backgammon", db)
    assert got[0, 0] == 0.0
    assert got[1, 0] == pytest.approx(5 / 6, abs=1e-12)


def test_fifteen_against_fifteen_is_consistent(db):
    """Both sides with none off: 0 <= gammon win <= win, 0 <= gammon loss <= loss; the same
    position on both sides favours the side on roll."""
    rng = np.random.default_rng(2)
    pts = bearoff.index_positions()
    fifteen = pts[pts.sum(1) == 15]
    pairs = fifteen[rng.integers(0, len(fifteen), (500, 2))]
    boards = np.array([afterstate(x, y) for x, y in pairs]
                      + [afterstate(x, x) for x in pairs[:, 0]])
    got = bearoff.bearoff_outcomes(boards, "backgammon", db)
    win, gw, gl = got[:, 0], got[:, 1], got[:, 3]
    assert (gw >= 0).all() and (gw <= win + 1e-12).all()
    assert (gl >= 0).all() and (gl <= 1 - win + 1e-12).all()
    assert (gw > 0).any() and (gl > 0).any()
    assert (win[500:] < 0.5).all()


def random_bearoffs(n, variant, seed, gammonish=False):
    """``n`` random bear-off afterstates of ``variant``; ``gammonish``: one side (the mover in
    the first half, the opponent in the second) has 15 on its points 4-6, the other at
    most 5 checkers."""
    rng = np.random.default_rng(seed)
    pts = bearoff.index_positions()
    if gammonish:
        high = pts[(pts.sum(1) == 15) & (pts[:, :3].sum(1) == 0)]
        big = high[rng.integers(0, len(high), n)]
        small = bearoff.index_positions(5)[1:]
        small = small[rng.integers(0, len(small), n)]
        h = n // 2
        sides = np.stack([np.r_[big[:h], small[h:]], np.r_[small[:h], big[h:]]], axis=1)
    else:
        sides = pts[rng.integers(1, len(pts), (n, 2))]
    return np.array([afterstate(x, y, variant) for x, y in sides])


@pytest.mark.parametrize("variant", ["backgammon", "long"])
def test_one_roll_of_the_opponent_with_the_engine(db, variant):
    """The on-roll convention, with the engine's plays: P(win) of an afterstate is the
    average over the opponent's 21 rolls of 1 - P(win) of the opponent's afterstate after
    its best play (0 when it bears off its last checker); the same for gammons, the loser
    playing to get a checker off."""
    v = get_variant(variant)
    L = len(v.scoring)
    for gammonish, seed in ((False, 3), (True, 4)):
        boards = random_bearoffs(200, v, seed, gammonish)
        n = len(boards)
        opp_view = np.repeat(flip(boards, v), 21, axis=0)
        after = generate(opp_view, np.tile(bearoff.ROLLS, (n, 1)), v)
        index = bearoff.position_index(after.boards[:, :6])
        finished = after.boards[:, OFF] == 15
        gone = after.boards[:, OFF] > opp_view[after.parent, OFF]

        def best(values):                     # per roll, a play of least value
            rows = np.lexsort((values, after.parent))
            return rows[np.r_[True, after.parent[rows][1:] != after.parent[rows][:-1]]]

        def outcomes(rows):                   # the opponent's, after its play
            out = np.zeros((len(rows), 2 * L - 1))
            live = ~finished[rows]
            out[live] = bearoff.bearoff_outcomes(after.boards[rows][live], v, db)
            return out

        probs = np.tile(bearoff.ROLL_PROBS, n)
        by_position = lambda x: (x * probs).reshape(n, 21).sum(1)              # noqa: E731
        rows = best(np.where(finished, 0.0, db.expected_off[index]))
        o = outcomes(rows)
        win = by_position(np.where(finished[rows], 0.0, 1 - o[:, 0]))
        got = bearoff.bearoff_outcomes(boards, v, db)
        assert np.abs(got[:, 0] - win).max() < 1e-9
        if gammonish:
            none_off = boards[:, OFF] == 0
            gammon_loss = by_position(np.where(finished[rows], 1.0, o[:, 1])) * none_off
            rows = best(np.where(gone, 0.0, db.expected_first[index]))
            gammon_win = by_position(np.where(gone[rows], 0.0, outcomes(rows)[:, L]))
            assert np.abs(got[:, 1] - gammon_win).max() < 1e-9
            assert np.abs(got[:, L] - gammon_loss).max() < 1e-9
            assert got[:, 1].max() > 0.1 and got[:, L].max() > 0.1


# --- every variant, and what is not a bear-off ----------------------------------------------

def test_outcome_layout_per_variant(db):
    """model.py's layout for every variant: win and gammon / mars the same in both families
    (COM-5), levels above 2 zero (every checker is home: no backgammon, koks, or trictrac
    4 / 8), dave only P(win) (LN-8)."""
    sides = [((0, 0, 0, 0, 1, 1), (0, 0, 0, 4, 5, 6)), ((0, 0, 0, 4, 5, 6), (0, 0, 0, 0, 1, 1)),
             ((3, 2, 1, 0, 0, 0), (1, 1, 1, 1, 1, 1))]
    ref = None
    for name in VARIANTS + ["long,koks"]:
        v = with_options("long", koks=True) if name == "long,koks" else get_variant(name)
        got = bearoff.bearoff_outcomes(np.array([afterstate(x, y, v) for x, y in sides]), v, db)
        L = len(v.scoring)
        assert got.shape == (len(sides), 2 * L - 1)
        if ref is None:
            ref = got
        assert np.array_equal(got[:, 0], ref[:, 0])
        if L >= 2:
            assert np.array_equal(got[:, [1, L]], ref[:, [1, 3]])
            assert (got[:, 2:L] == 0).all() and (got[:, L + 1:] == 0).all()
    # Only the side with 15 checkers on its points can be gammoned.
    assert ref[0, 1] > 0 and ref[1, 3] > 0 and ref[0, 3] == ref[1, 1] == 0 == ref[2, 1] == ref[2, 3]


def test_is_bearoff_and_refusals(db):
    """Only both-sides-home positions pass (COM-5); others raise NotBearoff naming the board."""
    good = afterstate((0, 0, 0, 0, 1, 1), (1, 0, 0, 0, 0, 0))
    outside = good.copy()
    outside[5] -= 1
    outside[6] += 1                                     # a mover checker on point 7
    on_bar = afterstate((0, 0, 0, 0, 1, 1), (1, 0, 0, 0, 0, 0))
    on_bar[OPP_OFF] -= 1
    on_bar[OPP_BAR] = 1                                 # an opponent checker on the bar
    done = afterstate((0,) * 6, (1, 0, 0, 0, 0, 0))     # the mover has borne off all 15
    boards = np.array([good, outside, on_bar, done])
    assert bearoff.is_bearoff(boards, "backgammon").tolist() == [True, False, False, False]
    # In long nardy the opponent's home is the mover's 13-18: the short layout is not home.
    assert not bearoff.is_bearoff(good[None], "long")[0]
    assert bearoff.is_bearoff(afterstate((0, 0, 0, 0, 1, 1), (1, 0, 0, 0, 0, 0), "long")[None],
                              "long")[0]
    with pytest.raises(bearoff.NotBearoff, match="board 1 .*COM-5"):
        bearoff.bearoff_outcomes(boards, "backgammon", db)
    with pytest.raises(InvalidPosition, match="COM-5"):
        bearoff.expected_rolls(np.array([(0, 0, 0, 0, 8, 8)]), db)


# --- d. the file and the command ------------------------------------------------------------

def test_file_round_trip(db, tmp_path):
    """save -> read gives the same tables; a folder gets the versioned file name."""
    path = bearoff.save_database(db, tmp_path)
    assert path == tmp_path / bearoff.FILE_NAME
    back = bearoff.read_database(path)
    assert back.max_checkers == 15 and back.K == db.K
    for name in ("off", "first", "expected_off", "expected_first"):
        assert np.array_equal(getattr(back, name), getattr(db, name))
    assert [p.name for p in tmp_path.iterdir()] == [bearoff.FILE_NAME]


def test_load_builds_once_and_caches(db, tmp_path, monkeypatch):
    """First use with no file builds and writes it; later calls reuse the same tables."""
    monkeypatch.setenv("NARDY_CACHE", str(tmp_path / "cache"))
    built = []
    monkeypatch.setattr(bearoff, "build_database", lambda: built.append(1) or db)
    first = bearoff.load_database()
    assert first is db and bearoff.load_database() is db and built == [1]
    assert (tmp_path / "cache" / bearoff.FILE_NAME).is_file()


def test_bad_files_are_refused_naming_the_file(tmp_path):
    """Garbage, a truncated file, another version, a partial table: BearoffFileError with
    the file's name; never a silent rebuild over it."""
    small = bearoff.build_database(max_checkers=3)
    good = bearoff.save_database(small, tmp_path / "good.npz")
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a database")
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[:2000])
    other = tmp_path / "v2.npz"
    with np.load(good) as z:
        fields = {k: z[k] for k in z.files}
    np.savez_compressed(other, **dict(fields, version=np.array(2)))
    skewed = tmp_path / "skewed.npz"
    np.savez_compressed(skewed, **dict(fields, off=fields["off"] * 1.5))
    for path, why in ((garbage, "unreadable"), (truncated, "unreadable"), (other, "version 2"),
                      (skewed, "not a set of probability distributions")):
        with pytest.raises(bearoff.BearoffFileError, match=why) as e:
            bearoff.read_database(path)
        assert str(path) in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(bearoff.BearoffFileError, match="up to 3 checkers"):
        bearoff.load_database(good)
    with pytest.raises(bearoff.BearoffFileError, match=str(garbage)):
        bearoff.load_database(garbage)
    assert garbage.read_bytes() == b"not a database"


def test_cli_build_writes_the_file(tmp_path, monkeypatch, capsys):
    """`nardy bearoff build --out PATH` exits 0 and writes a readable database."""
    small = bearoff.build_database(max_checkers=3)
    monkeypatch.setattr(bearoff, "build_database", lambda: small)
    out = tmp_path / "db.npz"
    assert cli.main(["bearoff", "build", "--out", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    assert np.array_equal(bearoff.read_database(out).off, small.off)


def test_cli_build_is_atomic(tmp_path, monkeypatch, capsys):
    """A write that fails half-way leaves the old target untouched and no temporary file, and
    the command reports one line naming the file (exit 2, no traceback)."""
    small = bearoff.build_database(max_checkers=3)
    monkeypatch.setattr(bearoff, "build_database", lambda: small)

    def disk_full(f, **arrays):
        f.write(b"PK\x03\x04 half a file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez_compressed", disk_full)
    target = tmp_path / "db.npz"
    target.write_bytes(b"the old file")
    assert cli.main(["bearoff", "build", "--out", str(target)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("nardy: error: cannot write bear-off database")
    assert str(target) in err[0] and "No space left" in err[0]
    assert target.read_bytes() == b"the old file"
    assert [p.name for p in tmp_path.iterdir()] == ["db.npz"]
