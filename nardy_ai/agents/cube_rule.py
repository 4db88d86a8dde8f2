"""Cube decisions (CUBE-1, CUBE-D) for the bots without an equity evaluator (heuristic,
pubeval): a pip-count rule, :func:`nardy_ai.cube.race_win_chance`.

In short nardy the rule acts only in a race (no contact, :func:`~nardy_ai.pubeval.is_race`):
double when the estimated win chance is at least :data:`~nardy_ai.cube.RACE_DOUBLE` (0.70), take
when it is at least :data:`~nardy_ai.cube.RACE_TAKE` (0.25); in contact never double and
always take.  Long nardy has no hitting, so the pip count rules every position.  No beaver.
"""

from __future__ import annotations

import numpy as np

from ..cube import RACE_DOUBLE, RACE_TAKE, Stakes, race_win_chance
from ..pubeval import is_race
from ..variants import Variant


def _race(boards: np.ndarray, v: Variant) -> np.ndarray:
    return np.ones(len(boards), bool) if v.is_long else is_race(boards)


class PipCountCube:
    """Mixin: ``double`` and ``take`` by the pip-count rule (boards seen by the player deciding;
    for ``take`` the doubler is on roll unless the cube dict says ``"on_roll": true``)."""

    def double(self, boards: np.ndarray, cubes, variant: Variant):
        boards = np.asarray(boards)
        p = race_win_chance(boards, variant, on_roll=True)
        return _race(boards, variant) & (p >= RACE_DOUBLE), [{"p": float(q)} for q in p]

    def take(self, boards: np.ndarray, cubes, variant: Variant):
        boards = np.asarray(boards)
        on_roll = Stakes.from_dicts(cubes, variant).on_roll
        p = np.where(on_roll, race_win_chance(boards, variant, True),
                     race_win_chance(boards, variant, False))
        return ~_race(boards, variant) | (p >= RACE_TAKE), [{"p": float(q)} for q in p]
