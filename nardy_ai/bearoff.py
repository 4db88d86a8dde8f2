"""One-sided bear-off database (COM-5) and exact bear-off vs bear-off outcome probabilities.

In a bear-off position both sides have all their remaining checkers on their own home points
(1-6), none on the bar: neither side can touch the other, in either family (short nardy: the
opponent's home is the mover's points 19-24; long nardy: 13-18).  So each side's future
depends only on its own checkers and its own rolls, and one table of *one-sided* positions
serves every variant.

The database
------------
A one-sided position is the number of checkers on each home point, ``(n1, ..., n6)`` with
``n1 + ... + n6 <= 15`` (the rest borne off): ``C(21, 6) = 54,264`` positions.  For each it
stores, as ``float64`` (``float32`` would leave errors near 1e-7 in the combined outcomes;
the tests check them to 1e-9):

``off[i, k]``
    P(the side needs exactly ``k`` rolls to bear off all its checkers), ``k = 0 .. K-1``,
    playing each roll to minimise the expected number of rolls.  ``K = 31``: the longest
    bear-off with non-zero probability under that policy takes 30 rolls (15 checkers on the
    6-point and nothing but small rolls: 4e-34).
``first[i, k]``
    P(the first checker comes off on exactly roll ``k``), playing each roll to minimise the
    expected number of rolls to the first checker off (what a side does to save a gammon /
    mars); ``K1 = 11`` columns (15 checkers on the 5-point can take 10 rolls).  Only
    meaningful for 15 checkers (a side with a checker off cannot be gammoned).
``expected_off``, ``expected_first``
    the expected numbers of rolls.

The empty position (index 0) has ``off[0, 0] = first[0, 0] = 1``.  Where several plays of a
roll reach the same least expectation the builder keeps the first the move generator lists;
it measures ``tie_spread``, the largest difference between the distributions such tied plays
lead to (0 up to rounding: the stored distributions do not depend on the choice).

Index (a combinatorial number system): with cumulative counts ``s_j = n1 + ... + nj`` and
``c_j = s_j + j - 1`` (strictly increasing, ``0 <= c_1 < ... < c_6 <= 20``), the index is
``sum_j C(c_j, j)``, ``j = 1..6``.  The empty position is 0; the positions with at most ``n``
checkers are exactly the indices below ``C(n + 6, 6)``.

Building: dynamic programming in order of pip count (every play lowers the pips, so all
successors are done first).  The legal plays come from the project's move generator
(:func:`nardy_ai.movegen.generate`, backgammon variant): the side's checkers on its home
points, the rest borne off, and the opponent's 15 checkers parked on the opponent's 1-point
(mover point 24) where they cannot interact, so COM-1/2/3/5 are applied by the engine.

Two-sided outcomes
------------------
For an afterstate (the mover has just moved, the opponent is on roll) let ``a_k`` / ``b_k`` be
the mover's / the opponent's ``off`` distributions, ``B(k) = b_1 + ... + b_k`` and ``F_m(k)``,
``F_o(k)`` the cumulative ``first`` distributions.  The opponent rolls first, so its ``k``-th
roll comes before the mover's ``k``-th:

- ``P(win) = sum_k a_k (1 - B(k))`` (the mover finishes on its roll ``k`` and the opponent
  has not finished in its first ``k`` rolls);
- ``P(gammon / mars win) = sum_k a_k (1 - F_o(k))`` when the opponent has none off, else 0;
- ``P(gammon / mars loss) = sum_k b_k (1 - F_m(k - 1))`` when the mover has none off, else 0.

These are exact when each side plays its one-sided policy (the gammon terms: the winner
bears off as fast as it can, the loser plays to get a checker off).  Best two-sided play
(maximising the chance to win) can differ slightly; ``tests/test_bearoff.py`` measures how
much on small positions.

The file
--------
``nardy bearoff build [--out PATH]`` writes ``bearoff_os6_v1.npz`` (compressed NumPy arrays
with a ``format`` / ``version`` field checked on load) to the cache folder (``$NARDY_CACHE``,
default ``~/.cache/nardy_ai``), atomically; :func:`load_database` reads it, or builds and
writes it on first use.  It is never part of the repository.
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass
from math import comb
from pathlib import Path
from typing import Callable

import numpy as np

from .board import BAR, BOARD_SIZE, OFF, OPP_BAR, OPP_OFF, mirror_index
from .classes import bearoff_positions
from .errors import InvalidPosition, NardyError
from .files import atomic_file
from .movegen import generate
from .variants import Variant, get_variant

N_POINTS = 6
MAX_CHECKERS = 15
N_POSITIONS = comb(MAX_CHECKERS + N_POINTS, N_POINTS)       # 54,264
FORMAT = "nardy_ai one-sided bear-off database"
VERSION = 1
FILE_NAME = f"bearoff_os6_v{VERSION}.npz"
#: Average pips of a roll (doubles count four times): the effective pip count's unit.
PIPS_PER_ROLL = 49 / 6
#: Expectations closer than this are a tie (rounding of sums of float64 probabilities).
_TIE = 1e-11
#: The 21 distinct rolls and their probabilities (a non-double comes two ways in 36).
ROLLS = np.array([(a, b) for a in range(1, 7) for b in range(a, 7)], np.int64)
ROLL_PROBS = np.where(ROLLS[:, 0] == ROLLS[:, 1], 1, 2) / 36.0
_BINOM = np.array([[comb(c, j) for j in range(1, N_POINTS + 1)]
                   for c in range(MAX_CHECKERS + N_POINTS)], np.int64)
_ROWS = 40                    # distribution columns while building (trimmed to K)


class BearoffFileError(NardyError):
    """A bear-off database file that cannot be used: unreadable, corrupt, another format or
    version.  The message names the file."""


class NotBearoff(InvalidPosition):
    """A board that is not bear-off vs bear-off (COM-5): some checker outside its side's home
    points 1-6 or on the bar, or a side with all 15 borne off."""


def position_index(points: np.ndarray) -> np.ndarray:
    """Database index ``(M,)`` int64 of one-sided positions ``points`` ``(M, 6)`` (checkers on
    points 1..6, at most 15 in all); the combinatorial number system of the module docstring."""
    p = np.asarray(points, np.int64)
    c = np.cumsum(p, axis=-1) + np.arange(N_POINTS)
    return _BINOM[c, np.arange(N_POINTS)].sum(-1)


def index_positions(max_checkers: int = MAX_CHECKERS) -> np.ndarray:
    """Every one-sided position with at most ``max_checkers`` checkers, ``(C(n + 6, 6), 6)``
    int8, row ``i`` being the position of index ``i``."""
    from itertools import combinations

    c = np.array(list(combinations(range(max_checkers + N_POINTS), N_POINTS)), np.int64)
    s = c - np.arange(N_POINTS)
    pts = np.diff(s, axis=1, prepend=0)
    out = np.empty_like(pts)
    out[position_index(pts)] = pts
    return out.astype(np.int8)


@dataclass(frozen=True)
class BearoffDatabase:
    """The one-sided tables (module docstring), for positions with at most ``max_checkers``
    checkers (indices below ``C(max_checkers + 6, 6)``).

    ``off`` ``(N, K)`` and ``first`` ``(N, K1)`` are float64 probabilities by number of rolls
    (column 0 = no roll needed); ``expected_off`` / ``expected_first`` ``(N,)`` in rolls;
    ``build_seconds`` the wall time of the build; ``tie_spread`` the largest difference between
    the distributions of plays tied on expectation."""

    off: np.ndarray
    first: np.ndarray
    expected_off: np.ndarray
    expected_first: np.ndarray
    max_checkers: int
    build_seconds: float
    tie_spread: float

    @property
    def K(self) -> int:
        """Columns of ``off``: one more than the largest number of rolls with non-zero
        probability."""
        return self.off.shape[1]

    def index(self, points: np.ndarray) -> np.ndarray:
        """:func:`position_index`, refusing positions with more checkers than the table holds."""
        p = np.asarray(points)
        if p.ndim != 2 or p.shape[1] != N_POINTS:
            raise InvalidPosition(f"one-sided bear-off positions must have shape (M, 6), got {p.shape}")
        if len(p) and (p.min() < 0 or p.sum(1).max() > self.max_checkers):
            raise InvalidPosition(f"one-sided bear-off positions hold 0..{self.max_checkers} "
                                  f"checkers on points 1-6, none negative (COM-5)")
        return position_index(p)


def _successors(pts: np.ndarray):
    """Every play of every roll from one-sided positions ``pts`` ``(n, 6)``, from the engine.
    Returns (successor indices, their (position, roll) row = position * 21 + roll, row offsets)."""
    n = len(pts)
    boards = np.zeros((n * len(ROLLS), BOARD_SIZE), np.int8)
    boards[:, :N_POINTS] = np.repeat(pts, len(ROLLS), axis=0)
    boards[:, OFF] = MAX_CHECKERS - boards[:, :N_POINTS].sum(1)
    boards[:, 23] = -MAX_CHECKERS          # the opponent, all on its 1-point (mover point 24)
    after = generate(boards, np.tile(ROLLS, (n, 1)), "backgammon")
    return position_index(after.boards[:, :N_POINTS]), after.parent, after.offsets


def _best_plays(values, dist, rows, offsets):
    """Per (position, roll) row, the play of least expected rolls: its index into ``values``,
    and the largest max-abs difference between the distributions ``dist(i)`` of tied plays."""
    starts = offsets[:-1]
    least = np.minimum.reduceat(values, starts)
    tied = np.flatnonzero(values <= least[rows] + _TIE)
    first = np.r_[True, rows[tied][1:] != rows[tied][:-1]]
    chosen = tied[first]
    spread = 0.0
    extra = tied[~first]
    extra = extra[values[extra] > 0]      # plays that finish (0 rolls left) are all alike
    if len(extra):
        spread = float(np.abs(dist(extra) - dist(chosen[rows[extra]])).max())
    return chosen, spread


def build_database(max_checkers: int = MAX_CHECKERS) -> BearoffDatabase:
    """Build the one-sided tables for positions of at most ``max_checkers`` checkers (the
    full database: 15, a few seconds).  Dynamic programming by pip count, batched over all
    positions of one pip count and all 21 rolls (module docstring)."""
    t0 = time.perf_counter()
    pts = index_positions(max_checkers)
    n_pos = len(pts)
    pips = pts.astype(np.int64) @ np.arange(1, N_POINTS + 1)
    count = pts.sum(1).astype(np.int64)
    off = np.zeros((n_pos, _ROWS))
    first = np.zeros((n_pos, _ROWS))
    off[0, 0] = first[0, 0] = 1.0
    e_off = np.zeros(n_pos)
    e_first = np.zeros(n_pos)
    done = np.zeros((1, _ROWS))
    done[0, 0] = 1.0
    spread = 0.0
    by_pips = np.argsort(pips, kind="stable")
    bounds = np.searchsorted(pips[by_pips], np.arange(pips.max() + 2))
    for p in range(1, pips.max() + 1):
        P = by_pips[bounds[p]:bounds[p + 1]]
        succ, rows, offsets = _successors(pts[P])
        # All off: the play with the least expected rolls.
        pick, s1 = _best_plays(e_off[succ], lambda i: off[succ[i]], rows, offsets)
        # First off: a play that bears a checker off ends it (0 more rolls).
        gone = count[succ] < np.repeat(count[P], len(ROLLS))[rows]
        e_after = np.where(gone, 0.0, e_first[succ])
        pick1, s2 = _best_plays(e_after, lambda i: np.where(gone[i, None], done, first[succ[i]]),
                                rows, offsets)
        spread = max(spread, s1, s2)
        sel = succ[pick].reshape(len(P), len(ROLLS))
        off[P, 1:] = np.einsum("r,nrk->nk", ROLL_PROBS, off[sel, :-1])
        e_off[P] = 1.0 + e_off[sel] @ ROLL_PROBS
        sel1 = succ[pick1].reshape(len(P), len(ROLLS))
        g1 = gone[pick1].reshape(len(P), len(ROLLS))
        after1 = np.where(g1[..., None], done[0], first[sel1])
        first[P, 1:] = np.einsum("r,nrk->nk", ROLL_PROBS, after1[..., :-1])
        e_first[P] = 1.0 + e_after[pick1].reshape(len(P), len(ROLLS)) @ ROLL_PROBS
    if off[:, -1].any() or first[:, -1].any():
        raise NardyError(f"bear-off build: a distribution needs more than {_ROWS - 1} rolls")
    K = int(np.flatnonzero(off.any(0)).max()) + 1
    K1 = int(np.flatnonzero(first.any(0)).max()) + 1
    return BearoffDatabase(off[:, :K].copy(), first[:, :K1].copy(), e_off, e_first,
                           max_checkers, time.perf_counter() - t0, spread)


# --- the file ------------------------------------------------------------------------------

def cache_dir() -> Path:
    """Where cached data files live: ``$NARDY_CACHE``, default ``~/.cache/nardy_ai``."""
    return Path(os.environ.get("NARDY_CACHE") or Path.home() / ".cache" / "nardy_ai")


def default_path() -> Path:
    """The database file in the cache folder."""
    return cache_dir() / FILE_NAME


def save_database(db: BearoffDatabase, path: str | os.PathLike) -> Path:
    """Write ``db`` to ``path`` (a folder gets :data:`FILE_NAME` inside) atomically: a
    temporary file in the same folder, renamed over the target only once complete.  Returns
    the path written; :class:`BearoffFileError` names it when writing fails."""
    path = Path(path)
    if path.is_dir():
        path = path / FILE_NAME
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BearoffFileError(f"cannot write bear-off database {path}: {e.strerror or e}") from None
    with atomic_file(path, BearoffFileError, what="bear-off database ") as f:
        np.savez_compressed(
            f, format=np.array(FORMAT), version=np.array(VERSION),
            n_points=np.array(N_POINTS), max_checkers=np.array(db.max_checkers),
            off=db.off, first=db.first, expected_off=db.expected_off,
            expected_first=db.expected_first, build_seconds=np.array(db.build_seconds),
            tie_spread=np.array(db.tie_spread))
    return path


def read_database(path: str | os.PathLike) -> BearoffDatabase:
    """Read a database file, checking its format, version, shapes and contents (each row a
    probability distribution whose mean is the stored expectation).  Anything else is a
    :class:`BearoffFileError` that names the file."""
    path = Path(path)

    def refuse(why: str):
        return BearoffFileError(f"bear-off database {path}: {why}; rebuild it with "
                                f"`nardy bearoff build --out {path}`")

    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise BearoffFileError(f"bear-off database {path}: no such file") from None
    except Exception as e:        # a damaged zip, a truncated array, not an .npz at all
        raise refuse(f"unreadable ({type(e).__name__})") from None
    if "format" not in data or str(data["format"]) != FORMAT:
        raise refuse("not a one-sided bear-off database")
    if "version" not in data or int(data["version"]) != VERSION:
        raise refuse(f"version {data.get('version')}, this nardy_ai reads version {VERSION}")
    try:
        n_max = int(data["max_checkers"])
        off, first = data["off"].astype(np.float64), data["first"].astype(np.float64)
        e_off, e_first = data["expected_off"], data["expected_first"]
        n = comb(n_max + N_POINTS, N_POINTS)
        ok = (int(data["n_points"]) == N_POINTS and 0 <= n_max <= MAX_CHECKERS
              and off.ndim == 2 and first.ndim == 2 and len(off) == n and len(first) == n
              and e_off.shape == (n,) and e_first.shape == (n,))
        build_seconds, spread = float(data["build_seconds"]), float(data["tie_spread"])
    except (KeyError, ValueError, TypeError):
        raise refuse("fields missing or malformed") from None
    if not ok:
        raise refuse("array shapes do not match")
    for name, d, e in (("off", off, e_off), ("first", first, e_first)):
        if not (np.isfinite(d).all() and d.min() >= 0 and np.abs(d.sum(1) - 1).max() < 1e-9
                and np.abs(d @ np.arange(d.shape[1]) - e).max() < 1e-9):
            raise refuse(f"table {name!r} is not a set of probability distributions")
    return BearoffDatabase(off, first, e_off.astype(np.float64), e_first.astype(np.float64),
                           n_max, build_seconds, spread)


_LOADED: dict[str, BearoffDatabase] = {}


def load_database(path: str | os.PathLike | None = None) -> BearoffDatabase:
    """The full database, once per process: read from ``path`` (default :func:`default_path`),
    or built and written there when the file is absent (a warning if it cannot be written;
    the built tables are used anyway).  A file of another version, a partial or a corrupt
    one is refused with :class:`BearoffFileError`."""
    path = Path(path) if path is not None else default_path()
    key = str(path.resolve())
    if key not in _LOADED:
        if path.exists():
            db = read_database(path)
            if db.max_checkers != MAX_CHECKERS:
                raise BearoffFileError(f"bear-off database {path}: holds positions of up to "
                                       f"{db.max_checkers} checkers, not {MAX_CHECKERS}")
        else:
            db = build_database()
            try:
                save_database(db, path)
            except BearoffFileError as e:
                warnings.warn(f"{e}; using the database built in memory", stacklevel=2)
        _LOADED[key] = db
    return _LOADED[key]


# --- lookups -------------------------------------------------------------------------------

def _db(db: BearoffDatabase | None) -> BearoffDatabase:
    return load_database() if db is None else db


def expected_rolls(points: np.ndarray, db: BearoffDatabase | None = None) -> np.ndarray:
    """Expected rolls ``(M,)`` to bear off all checkers of one-sided positions ``points``
    ``(M, 6)`` (checkers on points 1..6), each roll played to minimise it."""
    d = _db(db)
    return d.expected_off[d.index(points)]


def effective_pip_count(points: np.ndarray, db: BearoffDatabase | None = None) -> np.ndarray:
    """Effective pip count ``(M,)`` in pips: the expected rolls times the average roll (49/6
    pips), the race measure players use; its excess over the pip count is the *wastage*."""
    return expected_rolls(points, db) * PIPS_PER_ROLL


def rolls_distribution(points: np.ndarray, db: BearoffDatabase | None = None) -> np.ndarray:
    """P(all checkers off in exactly ``k`` rolls), ``(M, K)``, of one-sided positions ``points``."""
    d = _db(db)
    return d.off[d.index(points)]


def home_points(boards: np.ndarray, variant: str | Variant) -> np.ndarray:
    """Each side's checkers on its own points 1..6, ``(M, 2, 6)`` int64: ``[:, 0]`` the mover's
    (board points 1-6), ``[:, 1]`` the opponent's (its points 1-6 in its own numbering: mover
    points 24..19 in short nardy, 13..18 in long nardy)."""
    b = np.asarray(boards).astype(np.int64)
    opp_home = mirror_index(get_variant(variant))[:N_POINTS]
    return np.stack([np.maximum(b[:, :N_POINTS], 0), np.maximum(-b[:, opp_home], 0)], axis=1)


def is_bearoff(boards: np.ndarray, variant: str | Variant) -> np.ndarray:
    """``(M,)`` bool: both sides have all their remaining checkers on their own home points
    1-6 (COM-5), none on the bar (:func:`nardy_ai.classes.bearoff_positions`), 15 checkers
    each, and neither has all 15 off (a finished game is not a bear-off position).  Every
    such position is in the database."""
    b = np.asarray(boards).astype(np.int64)
    mover_all = np.maximum(b[:, :24], 0).sum(1) + b[:, BAR] + b[:, OFF]
    opp_all = np.maximum(-b[:, :24], 0).sum(1) + b[:, OPP_BAR] + b[:, OPP_OFF]
    return (bearoff_positions(b, variant) & (mover_all == MAX_CHECKERS) & (opp_all == MAX_CHECKERS)
            & (b[:, OFF] < MAX_CHECKERS) & (b[:, OPP_OFF] < MAX_CHECKERS))


def bearoff_outcomes(boards: np.ndarray, variant: str | Variant,
                     db: BearoffDatabase | None = None) -> np.ndarray:
    """Exact outcome probabilities ``(M, n_outputs)`` float64 of bear-off *afterstates*, from
    the mover's side (the opponent is on roll), in :mod:`nardy_ai.model`'s layout:
    ``P(win)``, ``P(win >= l)`` for ``l = 2..L``, ``P(lose >= l)`` for ``l = 2..L``, with
    ``L = len(variant.scoring)``.

    Level 2 is gammon / mars (the loser has borne off none: BG-6, BG-TT, LN-7), from the
    formulas of the module docstring.  Higher levels cannot happen here and are 0: a
    backgammon / koks needs a loser checker on the bar or in the winner's home (or, koks, the
    winner's points 1-12), trictrac's 4 and 8 points a loser checker outside its own home or
    on the bar, and in a bear-off every checker is in its own home.  With dave (LN-8) there
    is only ``P(win)``.  Boards that are not bear-off positions raise :class:`NotBearoff`.
    """
    v = get_variant(variant)
    b = np.asarray(boards)
    ok = is_bearoff(b, v)
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        raise NotBearoff(f"board {bad} is not a bear-off position: each side's checkers must all "
                         "be on its own home points 1-6, none on the bar, neither side all off (COM-5)")
    d = _db(db)
    home = home_points(b, v)
    im, io = d.index(home[:, 0]), d.index(home[:, 1])
    a, bo = d.off[im], d.off[io]
    L = len(v.scoring)
    out = np.zeros((len(b), 2 * L - 1))
    # P(X > k) = P(X >= k + 1): column k + 1 of the tail sums.
    out[:, 0] = (a * _at_least(bo, d.K + 1)[:, 1:]).sum(1)
    if L >= 2:
        out[:, 1] = (a * _at_least(d.first[io], d.K + 1)[:, 1:]).sum(1) * (b[:, OPP_OFF] == 0)
        out[:, L] = (bo * _at_least(d.first[im], d.K)).sum(1) * (b[:, OFF] == 0)
    return out


def _at_least(dist: np.ndarray, width: int) -> np.ndarray:
    """``P(X >= k)`` for ``k = 0 .. width - 1`` of distributions ``dist`` by rows: tail sums,
    so never below 0 by rounding."""
    tail = np.zeros((len(dist), width))
    n = min(dist.shape[1], width)
    tail[:, :n] = np.cumsum(dist[:, ::-1], axis=1)[:, ::-1][:, :n]
    return tail


class BearoffEvaluator:
    """The database as an :class:`~nardy_ai.evaluator.Evaluator`: exact outcome probabilities
    of bear-off afterstates (:func:`bearoff_outcomes`), for the player who has just moved.
    Afterstates where the mover has just borne off its last checker get the game's exact
    result (:func:`nardy_ai.model.terminal_outcomes`: the database's domain includes the
    finished games a net set's ``bearoff`` class routes to it).

    ``outcomes`` ``(boards, variant) -> (M, n_outputs)`` stands in for the database (tests).
    The database is exact, so a checkpoint plays with this code's database whatever version
    it was trained with (the version is recorded in :meth:`state` for the record)."""

    def __init__(self, variant: str | Variant,
                 outcomes: Callable[[np.ndarray, Variant], np.ndarray] | None = None):
        self.variant = get_variant(variant)
        self._outcomes = outcomes

    def probabilities(self, afterstates: np.ndarray) -> np.ndarray:
        """Exact outcome probabilities ``(M, n_outputs)`` float32 of bear-off afterstates
        (:class:`NotBearoff` for any other)."""
        from .model import n_outputs, terminal_outcomes
        boards = np.asarray(afterstates)
        out = np.empty((len(boards), n_outputs(self.variant)), np.float32)
        done = boards[:, OFF] == MAX_CHECKERS
        if done.any():
            out[done] = terminal_outcomes(boards[done], self.variant)
        if not done.all():
            out[~done] = (self._outcomes or bearoff_outcomes)(boards[~done], self.variant)
        return out

    def state(self) -> dict:
        """What a net set's checkpoint stores for its database member."""
        return {"kind": "database", "database": "bearoff", "version": VERSION}
