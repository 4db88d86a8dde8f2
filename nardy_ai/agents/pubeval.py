"""The pubeval player: greedy play by Tesauro's public-domain linear evaluator
(:mod:`nardy_ai.pubeval`: the weights, the inputs, the scores), the classic benchmark
opponent.  It plays the backgammon family (short nardy); long nardy has other geometry.

The race flag comes from the position *before* the move, as pubeval wants: the positions
the afterstates were generated from (``Afterstates.positions``).  Afterstates built without
them fall back on the afterstates themselves: contact never comes back once lost (no hit is
possible in a race and checkers only move forward), so a position was a race exactly when
all its afterstates are, except when every legal play breaks the last contact.
"""

from __future__ import annotations

import numpy as np

from ..errors import UnknownAgent
from ..movegen import Afterstates
from ..pubeval import is_race, pubeval_scores
from ..variants import Variant
from .base import Agent, segment_argmax
from .cube_rule import PipCountCube


class PubevalAgent(Agent):
    """Greedy play by pubeval; the race flag per position as the module docstring explains."""

    name = "pubeval"

    def choose(self, after: Afterstates, variant: Variant, rng: np.random.Generator) -> np.ndarray:
        if after.positions is not None:
            race_before = is_race(after.positions)
        else:
            race_rows = is_race(after.boards).astype(np.int8)
            race_before = np.minimum.reduceat(race_rows, after.offsets[:-1]).astype(bool)
        scores = pubeval_scores(after.boards, race_before[after.parent])
        return segment_argmax(scores, after.offsets, rng)


class CubePubevalAgent(PipCountCube, PubevalAgent):
    """Pubeval's play with the pip-count cube rule (:mod:`nardy_ai.agents.cube_rule`): what
    ``pubeval`` specs build."""


def pubeval_factory(arg: str, variant: Variant) -> CubePubevalAgent:
    """``pubeval`` (no argument); backgammon family only."""
    if arg:
        raise UnknownAgent(f"agent 'pubeval' takes no argument, got pubeval:{arg}")
    if variant.is_long:
        raise UnknownAgent(f"agent 'pubeval' plays the backgammon family (short nardy) only, "
                           f"not {variant.id}")
    return CubePubevalAgent()
