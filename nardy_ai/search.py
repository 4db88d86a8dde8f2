"""n-ply expectimax over any evaluator of afterstates, batched, with gnubg-style move filters.

Values.  An :class:`Evaluation` gives every afterstate a vector of ``K`` numbers from the side
that has just moved (a neural evaluator: its outcome probabilities; a plain equity function:
``K = 1``), says how the other side sees such a vector (``flip``) and how much it is worth
(``equity``, points per game, cubeless).  Afterstates where the mover has borne off all 15
checkers get their exact value (:meth:`Evaluation.terminal`), never the evaluator's.

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
positions in Python.

:func:`search_values` and :func:`search_equity` value afterstates, or positions with the
player on roll (``on_roll=True``, what a cube decision needs); :func:`best_afterstates`
chooses plays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .board import CHECKERS, OFF, flip
from .errors import NardyError
from .movegen import Afterstates, generate, segment_argmax, segment_ids
from .scoring import result_levels
from .variants import Variant

#: The 21 distinct rolls ``(21, 2)`` and their probabilities (doubles 1/36, others 2/36).
ROLLS = np.array([(a, b) for a in range(1, 7) for b in range(a, 7)], np.int64)
ROLL_WEIGHTS = np.where(ROLLS[:, 0] == ROLLS[:, 1], 1.0, 2.0) / 36.0
#: At most this many positions go into one generate call (about 70 MiB of move generation).
MAX_POSITIONS = 16384
#: The deepest search offered (a 2-ply decision values about 20,000 afterstates a position).
MAX_PLIES = 2


@dataclass(frozen=True)
class Evaluation:
    """How the search reads an evaluator.

    values
        afterstates ``(M, 28)`` int8 (the mover has just moved, none finished) to ``(M, K)``
        numbers from the mover's side.
    flip
        ``(..., K)`` from one side to the same from the other side.
    equity
        ``(..., K)`` to ``(...,)`` cubeless equity, points per game.
    exact
        result levels ``(M,)`` of finished games (winner = the mover) to ``(M, K)``.
    """

    variant: Variant
    size: int
    values: Callable[[np.ndarray], np.ndarray]
    flip: Callable[[np.ndarray], np.ndarray]
    equity: Callable[[np.ndarray], np.ndarray]
    exact: Callable[[np.ndarray], np.ndarray]

    def terminal(self, boards: np.ndarray) -> np.ndarray:
        """Exact values ``(M, K)`` of afterstates where the mover has borne off all 15."""
        return self.exact(result_levels(boards, self.variant))


def neural_evaluation(evaluator) -> Evaluation:
    """Search on a :class:`~nardy_ai.model.NeuralEvaluator`: its outcome probabilities."""
    from .model import equity, flip_outcomes, n_outputs, outcome_targets
    v = evaluator.variant
    return Evaluation(v, n_outputs(v), evaluator.probabilities, lambda p: flip_outcomes(p, v),
                      lambda p: equity(p, v), lambda levels: outcome_targets(levels, v))


def equity_evaluation(fn: Callable[[np.ndarray], np.ndarray], variant: Variant) -> Evaluation:
    """Search on a plain equity function: afterstates ``(M, 28)`` to points per game ``(M,)``
    for the side that has just moved (which must see ``-e`` where the other side sees ``e``)."""
    scoring = np.asarray(variant.scoring, float)
    return Evaluation(variant, 1, lambda b: np.asarray(fn(b), float)[:, None], np.negative,
                      lambda e: e[..., 0], lambda levels: scoring[np.asarray(levels) - 1][:, None])


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


def _reply_values(boards: np.ndarray, ev: Evaluation, plies: int) -> np.ndarray:
    """n-ply values (n >= 1) of unfinished afterstates: the roll-weighted mean of the
    opponent's 0-ply best reply valued at n - 1 plies, seen from our side."""
    n = len(boards)
    out = np.empty((n, ev.size))
    step = max(1, MAX_POSITIONS // len(ROLLS))
    for lo in range(0, n, step):
        part = boards[lo:lo + step]
        m = len(part)
        positions = np.repeat(flip(part, ev.variant), len(ROLLS), axis=0)
        after = generate(positions, np.tile(ROLLS, (m, 1)), ev.variant)
        reply0 = afterstate_values(after.boards, ev, 0)
        best = segment_argmax(ev.equity(reply0), after.offsets)
        reply = reply0[best] if plies == 1 else afterstate_values(after.boards[best], ev, plies - 1)
        mine = ev.flip(reply).reshape(m, len(ROLLS), ev.size)
        out[lo:lo + m] = np.einsum("nrk,r->nk", mine, ROLL_WEIGHTS)
    return out


def afterstate_values(boards: np.ndarray, ev: Evaluation, plies: int = 0) -> np.ndarray:
    """Values ``(M, K)`` of afterstates ``(M, 28)`` at ``plies`` for the side that just moved."""
    boards = np.asarray(boards, np.int8)
    out = np.empty((len(boards), ev.size))
    done = boards[:, OFF] == CHECKERS
    if done.any():
        out[done] = ev.terminal(boards[done])
    live = np.flatnonzero(~done)
    if len(live):
        b = boards[live]
        out[live] = ev.values(b) if plies == 0 else _reply_values(b, ev, plies)
    return out


def search_values(boards: np.ndarray, ev: Evaluation, plies: int = 0,
                  on_roll: bool = False) -> np.ndarray:
    """Values ``(M, K)`` at ``plies``: of afterstates for the side that just moved, or with
    ``on_roll`` of positions ``(M, 28)`` for the player about to roll (the opponent's
    afterstate, flipped)."""
    plies = _check_plies(plies)
    boards = np.asarray(boards, np.int8)
    if not on_roll:
        return afterstate_values(boards, ev, plies)
    return ev.flip(afterstate_values(flip(boards, ev.variant), ev, plies))


def search_equity(boards: np.ndarray, ev: Evaluation, plies: int = 0,
                  on_roll: bool = False) -> np.ndarray:
    """Cubeless equity ``(M,)`` (points per game) of :func:`search_values`."""
    return ev.equity(search_values(boards, ev, plies, on_roll))


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


def best_afterstates(after: Afterstates, ev: Evaluation, plies: int = 0,
                     filters: tuple[MoveFilter, ...] | None = None,
                     rng: np.random.Generator | None = None) -> np.ndarray:
    """The row of the best afterstate of each position at ``plies`` (``(N,)`` absolute rows),
    with ``filters`` (default :data:`DEFAULT_FILTERS`) pruning the candidates between plies;
    ties broken by ``rng`` when given."""
    filters = filters_for(plies, filters)
    eq0 = ev.equity(afterstate_values(after.boards, ev, 0))
    return filtered_choice(eq0, after.offsets, filters,
                           lambda rows, depth: ev.equity(afterstate_values(after.boards[rows], ev, depth)),
                           rng)
