"""n-ply expectimax over any evaluator of afterstates, batched, with gnubg-style move filters.

Values.  An :class:`~nardy_ai.evaluator.Evaluator` gives every afterstate its outcome
probabilities ``(K,)`` from the side that has just moved; the other side sees them flipped
(:func:`~nardy_ai.model.flip_outcomes`).  Afterstates where the mover has borne off every
checker get their exact value (:func:`nardy_ai.evaluator.outcomes`), never the evaluator's.
Plays and replies are ranked by ``rank`` (probabilities ``(..., K)`` to points per game),
by default the cubeless equity of the evaluator's variant (:func:`~nardy_ai.model.equity`).

Plies (gnubg's convention).  The 0-ply value of an afterstate is its evaluation.  Its n-ply
value is the average over the opponent's 21 rolls (doubles 1/36, others 2/36) of the
opponent's reply, seen from our side, where the opponent plays its *0-ply* best afterstate
and that reply is valued at (n - 1) plies.  So 1-ply looks at every roll and reply once,
2-ply also at our next roll and our 0-ply best answer to each reply.  With gnubg's 0-ply net
as the evaluation this reproduces gnubg's own 1- and 2-ply evaluations
(tests/test_gnubg_agent.py).

Move filters (gnubg's).  A decision at n plies first values every afterstate at 0 ply; each
:class:`MoveFilter` then keeps, per position, at most ``keep`` candidates within
``threshold`` (equity) of the best, which are valued one ply deeper; the last survivors are
valued at n plies and the best is played.  The 0-ply best always survives, and a position
left with one candidate is not searched further.

Batching.  Every level of the tree is one :func:`~nardy_ai.movegen.generate` call and one
evaluator call for all the positions, candidates and rolls of the batch together (split only
into chunks of at most :data:`MAX_POSITIONS` positions to bound memory); nothing loops over
positions in Python.  A batch of at least :data:`DISTINCT_MIN` afterstates is valued once per
distinct afterstate (:func:`~nardy_ai.board.distinct_boards`): the replies to different rolls
often coincide, about a quarter of a 2-ply search's last ply.

:func:`search_values` and :func:`search_equity` value afterstates, or positions with the
player on roll (``on_roll=True``, what a cube decision needs); :func:`best_afterstates`
chooses plays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .board import distinct_boards, flip
from .errors import NardyError
from .evaluator import Evaluator, outcomes
from .model import equity, flip_outcomes, n_outputs
from .movegen import Afterstates, generate, segment_argmax, segment_ids

#: How plays are ranked: outcome probabilities ``(..., K)`` to points per game ``(...,)``.
Rank = Callable[[np.ndarray], np.ndarray]

#: The 21 distinct rolls ``(21, 2)`` and their probabilities (doubles 1/36, others 2/36).
ROLLS = np.array([(a, b) for a in range(1, 7) for b in range(a, 7)], np.int64)
ROLL_WEIGHTS = np.where(ROLLS[:, 0] == ROLLS[:, 1], 1.0, 2.0) / 36.0
#: At most this many positions go into one generate call (about 70 MiB of move generation).
MAX_POSITIONS = 16384
#: Batches of at least this many afterstates are valued once per distinct afterstate.
DISTINCT_MIN = 2048
#: The deepest search of afterstate values (:func:`search_values`: a 3-ply value of a long-nardy
#: contact afterstate costs 3-5 CPU s: training labels on a cluster).
MAX_PLIES = 3
#: The deepest search an agent plays with (a 2-ply decision values about 20,000 afterstates a
#: position; a 3-ply one twenty times that).
MAX_AGENT_PLIES = 2


def cubeless(ev: Evaluator) -> Rank:
    """The default ranking: the cubeless equity (points per game) of ``ev``'s variant."""
    v = ev.variant
    return lambda p: equity(p, v)


@dataclass(frozen=True)
class MoveFilter:
    """Keep per position at most ``keep`` candidates within ``threshold`` (points per game)
    of the best one."""

    keep: int
    threshold: float


#: Filters per search depth: one per ply before the last.  1-ply: 8 candidates within 0.16
#: (gnubg's "normal" first stage); 2-ply: those, then 2 within 0.04 of the 1-ply best.
DEFAULT_FILTERS: dict[int, tuple[MoveFilter, ...]] = {
    0: (),
    1: (MoveFilter(8, 0.16),),
    2: (MoveFilter(8, 0.16), MoveFilter(2, 0.04)),
}


def _check_plies(plies: int) -> int:
    if isinstance(plies, bool) or not isinstance(plies, (int, np.integer)) or not 0 <= plies <= MAX_PLIES:
        raise NardyError(f"search depth must be 0 to {MAX_PLIES} plies, got {plies!r}")
    return int(plies)


def _reply_values(boards: np.ndarray, ev: Evaluator, plies: int, rank: Rank) -> np.ndarray:
    """n-ply values (n >= 1) of unfinished afterstates: the roll-weighted mean of the
    opponent's 0-ply best reply valued at n - 1 plies, seen from our side."""
    n, k, v = len(boards), n_outputs(ev.variant), ev.variant
    out = np.empty((n, k))
    step = max(1, MAX_POSITIONS // len(ROLLS))
    for lo in range(0, n, step):
        part = boards[lo:lo + step]
        m = len(part)
        positions = np.repeat(flip(part, v), len(ROLLS), axis=0)
        after = generate(positions, np.tile(ROLLS, (m, 1)), v)
        reply0 = afterstate_values(after.boards, ev, 0, rank)
        best = segment_argmax(rank(reply0), after.offsets)
        reply = reply0[best] if plies == 1 else afterstate_values(after.boards[best], ev, plies - 1, rank)
        mine = flip_outcomes(reply, v).reshape(m, len(ROLLS), k)
        out[lo:lo + m] = np.einsum("nrk,r->nk", mine, ROLL_WEIGHTS)
    return out


def afterstate_values(boards: np.ndarray, ev: Evaluator, plies: int = 0,
                      rank: Rank | None = None) -> np.ndarray:
    """Outcome probabilities ``(M, K)`` float64 of afterstates ``(M, 28)`` at ``plies`` for
    the side that just moved (replies chosen by ``rank``, default :func:`cubeless`).  A large
    batch is valued once per distinct afterstate (:func:`~nardy_ai.board.distinct_boards`)."""
    if len(boards) >= DISTINCT_MIN:
        unique, inverse = distinct_boards(boards)
        if len(unique) < len(boards):
            return _values(unique, ev, plies, rank)[inverse]
    return _values(boards, ev, plies, rank)


def _values(boards: np.ndarray, ev: Evaluator, plies: int, rank: Rank | None) -> np.ndarray:
    if plies == 0:
        return outcomes(ev, boards)
    rank = rank or cubeless(ev)
    return outcomes(ev, boards, lambda live: _reply_values(live, ev, plies, rank))


def search_values(boards: np.ndarray, ev: Evaluator, plies: int = 0,
                  on_roll: bool = False, rank: Rank | None = None) -> np.ndarray:
    """Values ``(M, K)`` at ``plies``: of afterstates for the side that just moved, or with
    ``on_roll`` of positions ``(M, 28)`` for the player about to roll (the opponent's
    afterstate, flipped)."""
    plies = _check_plies(plies)
    boards = np.asarray(boards, np.int8)
    if not on_roll:
        return afterstate_values(boards, ev, plies, rank)
    return flip_outcomes(afterstate_values(flip(boards, ev.variant), ev, plies, rank), ev.variant)


def search_equity(boards: np.ndarray, ev: Evaluator, plies: int = 0,
                  on_roll: bool = False, rank: Rank | None = None) -> np.ndarray:
    """Equity ``(M,)`` (points per game; by ``rank``, default cubeless) of :func:`search_values`."""
    return (rank or cubeless(ev))(search_values(boards, ev, plies, on_roll, rank))


def filter_candidates(equity: np.ndarray, offsets: np.ndarray, alive: np.ndarray,
                      move_filter: MoveFilter) -> np.ndarray:
    """``(M,)`` bool: the candidates among ``alive`` rows that pass ``move_filter``, ranked by
    ``equity`` within each position (``offsets`` as in :class:`Afterstates`)."""
    offsets = np.asarray(offsets, np.int64)
    seg = segment_ids(offsets)
    score = np.where(alive, equity, -np.inf)
    best = np.maximum.reduceat(score, offsets[:-1])[seg]
    order = np.lexsort((-score, seg))              # by position, best first; ties by row
    rank = np.empty(len(score), np.int64)
    rank[order] = np.arange(len(score)) - offsets[seg[order]]
    return alive & (rank < move_filter.keep) & (score >= best - move_filter.threshold)


def filtered_choice(equity: np.ndarray, offsets: np.ndarray, filters: tuple[MoveFilter, ...],
                    deeper: Callable[[np.ndarray, int], np.ndarray],
                    rng: np.random.Generator | None = None) -> np.ndarray:
    """The best afterstate row of each position, ``(N,)``, after the staged move filters.

    ``equity`` ``(M,)`` are the 0-ply equities of all afterstates; after filter ``i``
    (1-based) the surviving rows of positions with more than one candidate are valued again
    by ``deeper(rows, i)`` (equities at ``i`` plies).  Ties are broken by ``rng`` when given.
    """
    eq = np.array(equity, dtype=float)
    offsets = np.asarray(offsets, np.int64)
    alive = np.ones(len(eq), bool)
    counts = np.diff(offsets)
    for depth, move_filter in enumerate(filters, start=1):
        alive = filter_candidates(eq, offsets, alive, move_filter)
        open_pos = np.add.reduceat(alive.astype(np.int64), offsets[:-1]) > 1
        rows = np.flatnonzero(alive & np.repeat(open_pos, counts))
        if not len(rows):
            break
        eq[rows] = deeper(rows, depth)
    return segment_argmax(np.where(alive, eq, -np.inf), offsets, rng)


def filters_for(plies: int, filters: tuple[MoveFilter, ...] | None = None) -> tuple[MoveFilter, ...]:
    """The move filters of a ``plies``-deep decision (default :data:`DEFAULT_FILTERS`),
    checked: one per ply before the last."""
    plies = _check_plies(plies)
    filters = DEFAULT_FILTERS.get(plies) if filters is None else tuple(filters)
    if filters is None or len(filters) != plies:
        raise NardyError(f"a {plies}-ply search needs {plies} move filters, got {filters!r}")
    return filters


def best_afterstates(after: Afterstates, ev: Evaluator, plies: int = 0,
                     filters: tuple[MoveFilter, ...] | None = None,
                     rng: np.random.Generator | None = None, rank: Rank | None = None) -> np.ndarray:
    """The row of the best afterstate of each position at ``plies`` (``(N,)`` absolute rows)
    by ``rank`` (default :func:`cubeless`), with ``filters`` (default :data:`DEFAULT_FILTERS`)
    pruning the candidates between plies; ties broken by ``rng`` when given."""
    filters = filters_for(plies, filters)
    rank = rank or cubeless(ev)
    eq0 = rank(afterstate_values(after.boards, ev, 0))
    return filtered_choice(eq0, after.offsets, filters,
                           lambda rows, depth: rank(afterstate_values(after.boards[rows], ev, depth, rank)),
                           rng)
