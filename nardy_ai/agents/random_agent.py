"""The random agent: a baseline that plays every legal afterstate with equal probability."""

from __future__ import annotations

import numpy as np

from ..movegen import Afterstates
from ..variants import Variant
from .base import Agent


class RandomAgent(Agent):
    """Uniform over the distinct afterstates of each position (not over step orders)."""

    name = "random"

    def choose(self, after: Afterstates, variant: Variant, rng: np.random.Generator) -> np.ndarray:
        counts = np.diff(after.offsets)
        return after.offsets[:-1] + rng.integers(counts)
