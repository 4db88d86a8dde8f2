"""Neural agents: play the afterstate with the best equity according to an evaluator (0-ply).

Spec: ``td:PATH`` (a checkpoint written by ``nardy train``).  Every afterstate of the whole
batch is evaluated in one forward pass.
"""

from __future__ import annotations

import numpy as np

from ..model import NeuralEvaluator, equity, load_evaluator
from ..movegen import Afterstates
from ..variants import Variant
from .base import Agent, segment_argmax


class NeuralAgent(Agent):
    """Greedy (0-ply) player on a :class:`~nardy_ai.model.NeuralEvaluator`."""

    def __init__(self, evaluator: NeuralEvaluator, name: str = "td"):
        self.evaluator = evaluator
        self.name = name

    def choose(self, after: Afterstates, variant: Variant, rng: np.random.Generator) -> np.ndarray:
        eq = equity(self.evaluator.probabilities(after.boards), self.evaluator.variant)
        return segment_argmax(eq, after.offsets, rng)


def td_factory(arg: str, variant: Variant) -> NeuralAgent:
    """``td:PATH`` -> a 0-ply agent on the checkpoint at PATH (refusing another variant)."""
    from ..errors import UnknownAgent
    if not arg:
        raise UnknownAgent("agent 'td' needs a checkpoint: td:checkpoints/<variant>/<file>.pt")
    ev = load_evaluator(arg, variant)
    return NeuralAgent(ev, name=f"td:{arg}")
