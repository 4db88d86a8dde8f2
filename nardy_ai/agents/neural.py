"""Neural agents: play the afterstate with the best equity according to an evaluator, at 0 ply
(greedy: every afterstate of the whole batch in one forward pass) or with an n-ply expectimax
search (:mod:`nardy_ai.search`: 21 rolls per level, gnubg-style move filters).

Spec: ``td:PATH`` (a checkpoint written by ``nardy train``), ``td:PATH@1ply``,
``td:PATH@2ply`` (``@0ply`` is the default).  Afterstates that bear off the last checker
are valued exactly, not by the net.
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import UnknownAgent
from ..model import NeuralEvaluator, load_evaluator
from ..movegen import Afterstates
from ..search import (MAX_PLIES, MoveFilter, best_afterstates, filters_for, neural_evaluation,
                      search_equity)
from ..variants import Variant
from .base import Agent

_PLIES = re.compile(r"^(?P<path>.+)@(?P<plies>\d+)ply$")


class NeuralAgent(Agent):
    """Player on a :class:`~nardy_ai.model.NeuralEvaluator` searching ``plies`` deep
    (0 = greedy), with the move filters of :data:`nardy_ai.search.DEFAULT_FILTERS` unless
    ``filters`` are given."""

    def __init__(self, evaluator: NeuralEvaluator, name: str = "td", plies: int = 0,
                 filters: tuple[MoveFilter, ...] | None = None):
        self.evaluator = evaluator
        self.evaluation = neural_evaluation(evaluator)
        self.name = name
        self.filters = filters_for(plies, filters)
        self.plies = plies

    def choose(self, after: Afterstates, variant: Variant, rng: np.random.Generator) -> np.ndarray:
        return best_afterstates(after, self.evaluation, self.plies, self.filters, rng)

    def equity(self, boards: np.ndarray, variant: Variant) -> np.ndarray:
        """Cubeless equity of afterstates for the side that just played, at this agent's depth."""
        return search_equity(boards, self.evaluation, self.plies)


def parse_td_spec(arg: str) -> tuple[str, int]:
    """``PATH`` or ``PATH@Nply`` -> ``(PATH, N)``."""
    m = _PLIES.match(arg)
    if not m:
        return arg, 0
    plies = int(m["plies"])
    if plies > MAX_PLIES:
        raise UnknownAgent(f"td:{arg}: a {plies}-ply search is not offered; use @0ply to "
                           f"@{MAX_PLIES}ply")
    return m["path"], plies


def td_factory(arg: str, variant: Variant) -> NeuralAgent:
    """``td:PATH[@Nply]`` -> an agent on the checkpoint at PATH (refusing another variant)."""
    if not arg:
        raise UnknownAgent("agent 'td' needs a checkpoint: td:checkpoints/<variant>/<file>.pt[@1ply]")
    path, plies = parse_td_spec(arg)
    ev = load_evaluator(path, variant)
    return NeuralAgent(ev, name=f"td:{arg}", plies=plies)
