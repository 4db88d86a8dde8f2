"""A greedy hand-written evaluator: a baseline that must beat the random agent decisively.

Every afterstate of the batch is scored at once (pure array code, mover's view, the mover has
just played) and the best one per position is played (:func:`segment_argmax`, random ties).
Scores are in *pip equivalents*: one unit is worth one pip of pip-count lead.

Short nardy (backgammon geometry)
    pip-count lead; checkers borne off; opponent checkers on the bar (hits); made points by
    position (home board first, then the bar point); adjacent made points and the longest
    prime; minus, for each blot, the chance it is hit (the opponent's direct and indirect shots
    from every checker behind it, blocks ignored) times what the hit costs (pips lost plus a
    fixed tempo cost).  Structure only counts while the sides are in contact.
Long nardy
    pip-count lead; checkers borne off; checkers still on the head; points held in front of
    the opponent's rearmost checker (LN-2: one checker holds a point) and the longest block
    of them (the generator already forbids illegal six-blocks, LN-5); minus stacking beyond
    three checkers on a point other than the head.
"""

from __future__ import annotations

import numpy as np

from ..board import BAR, OFF, OPP_BAR, flip, pip_counts
from ..movegen import Afterstates
from ..variants import Variant
from .base import Agent, segment_argmax
from .cube_rule import PipCountCube

#: Weights in pip equivalents per unit of each feature.
WEIGHTS: dict[str, dict[str, float]] = {
    "short": {
        "pip": 1.0,          # per pip of lead
        "off": 1.5,          # per checker borne off
        "hit": 4.0,          # per opponent checker on the bar (on top of the pips it lost)
        "point": 1.0,        # times POINT_VALUE of each made point
        "pair": 1.5,         # per pair of adjacent made points
        "prime": 1.0,        # per point of the longest run of made points beyond 2, squared
        "blot": 1.0,         # times P(hit) x (blot_tempo + pips lost)
        "blot_tempo": 6.0,   # fixed cost of being hit, pips
    },
    "long": {
        "pip": 1.0,          # per pip of lead
        "off": 1.5,          # per checker borne off
        "head": 1.5,         # per checker still on the head (point 24)
        "block": 1.0,        # per held point in front of the opponent's rearmost checker
        "run": 1.0,          # per point of the longest such run beyond 1, squared
        "stack": 1.0,        # per checker beyond 3 on a point other than the head
    },
}
#: Short nardy: value of a made point (2+ checkers) on points 1..24 of the mover.
POINT_VALUE = np.array([1.0, 1.5, 2.5, 3.5, 4.0, 4.0,      # home board
                        3.0, 2.0, 1.0, 0.5, 0.5, 0.5,      # outfield, bar point first
                        0.0, 0.0, 0.0, 0.0, 0.0, 0.5,
                        1.0, 1.5, 1.5, 1.0, 0.5, 0.5])     # anchors in the opponent's home
#: Of the 36 rolls, how many let one checker travel exactly ``d`` pips (blocks ignored).
_SHOTS = {1: 11, 2: 12, 3: 14, 4: 15, 5: 15, 6: 17, 7: 6, 8: 6, 9: 5, 10: 3, 11: 2, 12: 3,
          15: 1, 16: 1, 18: 1, 20: 1, 24: 1}
#: _SHOT_MATRIX[q, p - 1]: rolls with which an opponent checker on mover point q (0 = the bar)
#: reaches mover point p; the opponent moves from the mover's point 1 towards 24 (BG-1).
_SHOT_MATRIX = np.zeros((25, 24))
for _q in range(25):
    for _p in range(_q + 1, 25):
        _SHOT_MATRIX[_q, _p - 1] = _SHOTS.get(_p - _q, 0)


def _longest_run(x: np.ndarray) -> np.ndarray:
    """Longest run of consecutive True along the last axis of a ``(M, K)`` bool array."""
    run = np.zeros(len(x), np.int64)
    best = np.zeros(len(x), np.int64)
    for k in range(x.shape[1]):
        run = (run + 1) * x[:, k]
        np.maximum(best, run, out=best)
    return best


def _short_scores(b: np.ndarray, v: Variant, w: dict[str, float]) -> np.ndarray:
    pts = b[:, :24].astype(np.int64)
    mine, theirs = np.maximum(pts, 0), np.maximum(-pts, 0)
    pips = pip_counts(b, v)
    score = w["pip"] * (pips[:, 1] - pips[:, 0]) + w["off"] * b[:, OFF] + w["hit"] * b[:, OPP_BAR]
    # Contact: an opponent checker (mover points, 0 = bar) behind one of the mover's.
    idx = np.arange(1, 25)
    my_back = np.where(b[:, BAR] > 0, 25, (idx * (mine > 0)).max(1))
    opp_back = np.where(b[:, OPP_BAR] > 0, 0, np.where(theirs > 0, idx, 25).min(1))
    contact = opp_back < my_back
    made = mine >= 2
    structure = (w["point"] * (made @ POINT_VALUE)
                 + w["pair"] * (made[:, 1:] & made[:, :-1]).sum(1)
                 + w["prime"] * np.maximum(_longest_run(made) - 2, 0) ** 2)
    sources = np.concatenate([(b[:, OPP_BAR] > 0)[:, None], theirs > 0], axis=1)
    p_hit = np.minimum(sources @ _SHOT_MATRIX, 36.0) / 36.0
    blot_cost = ((mine == 1) * p_hit * (w["blot_tempo"] + (25 - idx))).sum(1)
    return score + contact * (structure - w["blot"] * blot_cost)


def _long_scores(b: np.ndarray, v: Variant, w: dict[str, float]) -> np.ndarray:
    pts = b[:, :24].astype(np.int64)
    pips = pip_counts(b, v)
    score = w["pip"] * (pips[:, 1] - pips[:, 0]) + w["off"] * b[:, OFF] - w["head"] * pts[:, 23]
    score -= w["stack"] * np.maximum(pts[:, :23] - 3, 0).sum(1)
    # In the opponent's numbering its checkers run 24 -> 1; a held point blocks it when it
    # lies below the opponent's rearmost checker.
    opp_view = flip(b, v)[:, :24]
    held = opp_view < 0
    rear = (np.arange(1, 25) * (opp_view > 0)).max(1)
    in_front = held & (np.arange(1, 25) < rear[:, None])
    score += w["block"] * in_front.sum(1)
    score += w["run"] * np.maximum(_longest_run(in_front) - 1, 0) ** 2
    return score


class HeuristicAgent(PipCountCube, Agent):
    """Greedy one-ply play by the hand-written evaluation :meth:`evaluate`; cube decisions by
    the pip-count rule (:mod:`nardy_ai.agents.cube_rule`)."""

    name = "heuristic"

    def __init__(self, weights: dict[str, dict[str, float]] | None = None):
        self.weights = WEIGHTS if weights is None else weights

    def evaluate(self, boards: np.ndarray, variant: Variant) -> np.ndarray:
        """Score of afterstates ``(M, 28)`` from the side that just played, in pip equivalents."""
        b = np.asarray(boards)
        if variant.is_long:
            return _long_scores(b, variant, self.weights["long"])
        return _short_scores(b, variant, self.weights["short"])

    def choose(self, after: Afterstates, variant: Variant, rng: np.random.Generator) -> np.ndarray:
        return segment_argmax(self.evaluate(after.boards, variant), after.offsets, rng)
