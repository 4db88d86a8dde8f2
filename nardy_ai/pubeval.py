"""Pubeval: Tesauro's public-domain linear evaluator, the classic benchmark opponent (its
player is :class:`nardy_ai.agents.pubeval.PubevalAgent`).

Pubeval scores an afterstate as ``w . x`` with 122 inputs ``x`` and one of two published
weight vectors: *race* weights when the position before the move had no contact, *contact*
weights otherwise.  It is a move selector only (its scores are not equities) and it plays
the backgammon family (short nardy); long nardy has other geometry.

Inputs (Tesauro's ``setx``), in pubeval's numbering: pubeval's point ``p`` (1..24, the mover
moving from 24 to 1, the mover's checkers positive) is our point ``p`` (index ``p - 1``),
so the layouts agree point for point.  For input block ``k = 0..23`` (pubeval point
``24 - k``) with ``n`` the signed count there: ``[n == -1, n == 1, n >= 2, n == 3,
(n - 3) / 2 if n >= 4]``; input 120 is the opponent's checkers on the bar ``/ 2`` and input
121 the mover's checkers borne off ``/ 15``.  Pubeval does not read the mover's bar, nor
the opponent's borne-off checkers.  An afterstate where the mover has borne off all 15
scores 99999999, as in the original.

The race flag should come from the position *before* the move, as pubeval wants: the player
(:mod:`nardy_ai.agents.pubeval`) takes it from the positions the afterstates were generated
from.

As an :class:`~nardy_ai.evaluator.Evaluator` (:class:`PubevalEvaluator`,
``load_evaluator("pubeval", variant)``) it sees afterstates only, so each afterstate's own
race flag is used; its score ``s`` is reported as ``P(win) = 1 / (1 + exp(-s))`` and no gammons:
a monotone map, so ranking afterstates by the cubeless equity ranks them as the scores do.
The numbers are not calibrated probabilities.

Weights and encoding: Tesauro's pubeval.c (public domain), as kept in OpenBSD's
``games/backgammon/backgammon/pubeval.c``, with the weight files ``WT.race`` and ``WT.cntc``.
"""

from __future__ import annotations

import numpy as np

from .board import CHECKERS, OFF, OPP_BAR
from .classes import short_contact
from .errors import NardyError
from .variants import Variant, get_variant

#: Race weights (WT.race), inputs 0..121.
RACE_WEIGHTS = np.array([
    0.00000, -0.17160, 0.27010, 0.29906, -0.08471, 0.00000, -1.40375, -1.05121, 0.07217, -0.01351,
    0.00000, -1.29506, -2.16183, 0.13246, -1.03508, 0.00000, -2.29847, -2.34631, 0.17253, 0.08302,
    0.00000, -1.27266, -2.87401, -0.07456, -0.34240, 0.00000, -1.34640, -2.46556, -0.13022, -0.01591,
    0.00000, 0.27448, 0.60015, 0.48302, 0.25236, 0.00000, 0.39521, 0.68178, 0.05281, 0.09266,
    0.00000, 0.24855, -0.06844, -0.37646, 0.05685, 0.00000, 0.17405, 0.00430, 0.74427, 0.00576,
    0.00000, 0.12392, 0.31202, -0.91035, -0.16270, 0.00000, 0.01418, -0.10839, -0.02781, -0.88035,
    0.00000, 1.07274, 2.00366, 1.16242, 0.22520, 0.00000, 0.85631, 1.06349, 1.49549, 0.18966,
    0.00000, 0.37183, -0.50352, -0.14818, 0.12039, 0.00000, 0.13681, 0.13978, 1.11245, -0.12707,
    0.00000, -0.22082, 0.20178, -0.06285, -0.52728, 0.00000, -0.13597, -0.19412, -0.09308, -1.26062,
    0.00000, 3.05454, 5.16874, 1.50680, 5.35000, 0.00000, 2.19605, 3.85390, 0.88296, 2.30052,
    0.00000, 0.92321, 1.08744, -0.11696, -0.78560, 0.00000, -0.09795, -0.83050, -1.09167, -4.94251,
    0.00000, -1.00316, -3.66465, -2.56906, -9.67677, 0.00000, -2.77982, -7.26713, -3.40177, -12.32252,
    0.00000, 3.42040,
])
#: Contact weights (WT.cntc), inputs 0..121.
CONTACT_WEIGHTS = np.array([
    0.25696, -0.66937, -1.66135, -2.02487, -2.53398, -0.16092, -1.11725, -1.06654, -0.92830, -1.99558,
    -1.10388, -0.80802, 0.09856, -0.62086, -1.27999, -0.59220, -0.73667, 0.89032, -0.38933, -1.59847,
    -1.50197, -0.60966, 1.56166, -0.47389, -1.80390, -0.83425, -0.97741, -1.41371, 0.24500, 0.10970,
    -1.36476, -1.05572, 1.15420, 0.11069, -0.38319, -0.74816, -0.59244, 0.81116, -0.39511, 0.11424,
    -0.73169, -0.56074, 1.09792, 0.15977, 0.13786, -1.18435, -0.43363, 1.06169, -0.21329, 0.04798,
    -0.94373, -0.22982, 1.22737, -0.13099, -0.06295, -0.75882, -0.13658, 1.78389, 0.30416, 0.36797,
    -0.69851, 0.13003, 1.23070, 0.40868, -0.21081, -0.64073, 0.31061, 1.59554, 0.65718, 0.25429,
    -0.80789, 0.08240, 1.78964, 0.54304, 0.41174, -1.06161, 0.07851, 2.01451, 0.49786, 0.91936,
    -0.90750, 0.05941, 1.83120, 0.58722, 1.28777, -0.83711, -0.33248, 2.64983, 0.52698, 0.82132,
    -0.58897, -1.18223, 3.35809, 0.62017, 0.57353, -0.07276, -0.36214, 4.37655, 0.45481, 0.21746,
    0.10504, -0.61977, 3.54001, 0.04612, -0.18108, 0.63211, -0.87046, 2.47673, -0.48016, -1.27157,
    0.86505, -1.11342, 1.24612, -0.82385, -2.77082, 1.23606, -1.59529, 0.10438, -1.30206, -4.11520,
    5.62596, -2.75800,
])
#: What pubeval returns when the mover has borne off all 15 checkers.
BORNE_OFF_SCORE = 99999999.0


def _point_tables(w: np.ndarray) -> np.ndarray:
    """``(24 * 31,)``: the score a signed count ``n`` on our point index ``i`` adds, at
    ``i * 31 + n + 15`` (the 5 inputs of a point folded into one lookup)."""
    n = np.arange(-15, 16)
    table = np.zeros((24, 31))
    for i in range(24):
        block = w[5 * (23 - i):5 * (23 - i) + 5]     # our index i is pubeval point i + 1
        table[i] = (block[0] * (n == -1) + block[1] * (n == 1) + block[2] * (n >= 2)
                    + block[3] * (n == 3) + block[4] * np.maximum(n - 3, 0) / 2.0)
    return table.ravel()


#: Contact tables then race tables, one flat array: race rows add ``24 * 31``.
_TABLES = np.concatenate([_point_tables(CONTACT_WEIGHTS), _point_tables(RACE_WEIGHTS)])
_POINT_BASE = np.arange(24) * 31 + 15


def is_race(boards: np.ndarray) -> np.ndarray:
    """``(M,)`` bool: no contact left (BG family, mover's view): every mover checker has
    passed every opponent checker (:func:`nardy_ai.classes.short_contact`, negated)."""
    return ~short_contact(np.asarray(boards))


def pubeval_scores(boards: np.ndarray, race: np.ndarray) -> np.ndarray:
    """Pubeval's score of afterstates ``(M, 28)`` (mover's view, the mover has just played),
    with the race weights where ``race`` ``(M,)`` is true: ``(M,)`` float64, higher is better."""
    b = np.asarray(boards)
    race = np.asarray(race, bool)
    idx = b[:, :24].astype(np.intp) + _POINT_BASE + np.where(race, 24 * 31, 0)[:, None]
    w = np.where(race[:, None], RACE_WEIGHTS[120:], CONTACT_WEIGHTS[120:])
    score = np.take(_TABLES, idx).sum(1) + w[:, 0] * b[:, OPP_BAR] / 2.0 + w[:, 1] * b[:, OFF] / 15.0
    return np.where(b[:, OFF] == CHECKERS, BORNE_OFF_SCORE, score)


class PubevalEvaluator:
    """Pubeval as an :class:`~nardy_ai.evaluator.Evaluator` of backgammon-family afterstates
    (module docstring: the logistic of the score as ``P(win)``, no gammons)."""

    def __init__(self, variant: str | Variant = "backgammon"):
        v = get_variant(variant)
        if v.is_long:
            raise NardyError(f"pubeval values the backgammon family (short nardy) only, not {v.id}")
        self.variant = v

    def probabilities(self, afterstates: np.ndarray) -> np.ndarray:
        """``(M, n_outputs)`` float64: the logistic of pubeval's score (each afterstate's own
        race flag) as ``P(win)``, zeros for the higher levels."""
        b = np.asarray(afterstates)
        out = np.zeros((len(b), 2 * len(self.variant.scoring) - 1))
        out[:, 0] = 0.5 * (1.0 + np.tanh(0.5 * pubeval_scores(b, is_race(b))))
        return out
